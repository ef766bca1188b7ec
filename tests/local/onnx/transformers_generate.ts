/**
 * Run by `export_test.ts` in a process of its own: transformers.js loads ONNX Runtime itself
 * (the same 1.30 since transformers.js 4), and two loads of one native library in a process
 * are a risk not worth testing around. Loads an exported model folder with
 * transformers.js's text-generation pipeline, renders `messages` with the exported chat
 * template, generates greedily and prints the prompt's and the continuation's token ids as JSON.
 *
 * usage: deno run -A --config CONFIG transformers_generate.ts MODEL_DIR MESSAGES_JSON MAX_NEW_TOKENS
 * where CONFIG is the deno.json of this test's own install (`installTestDeps("transformers")`,
 * tests/deps.ts): transformers.js is not one of the project's dependencies.
 */

import { basename, dirname } from "node:path";

/** The parts of transformers.js this script calls. */
interface TextGenerationPipeline {
  tokenizer: {
    apply_chat_template(messages: unknown, options: object): unknown;
    encode(text: string, options: object): ArrayLike<number>;
  };
  (text: string, options: object): Promise<unknown>;
}
interface Transformers {
  env: { allowRemoteModels: boolean; localModelPath: string };
  pipeline(task: string, model: string, options: object): Promise<unknown>;
}

// A specifier in a variable: the project's type check does not resolve a package it lacks.
const SPECIFIER = "@huggingface/transformers";
const { env, pipeline } = (await import(SPECIFIER)) as Transformers;

const [dir, messagesJson, maxNew] = Deno.args;
env.allowRemoteModels = false;
env.localModelPath = dirname(dir) + "/";
const generate = (await pipeline("text-generation", basename(dir), {
  dtype: "fp32",
})) as TextGenerationPipeline;
const text = generate.tokenizer.apply_chat_template(JSON.parse(messagesJson), {
  tokenize: false,
  add_generation_prompt: true,
}) as string;
const prompt = Array.from(generate.tokenizer.encode(text, { add_special_tokens: false }));
const [out] = await generate(text, {
  max_new_tokens: Number(maxNew),
  do_sample: false,
  return_full_text: false,
  add_special_tokens: false,
}) as { generated_text: string }[];
console.log(JSON.stringify({ text, prompt, continuation: out.generated_text }));
Deno.exit(0);
