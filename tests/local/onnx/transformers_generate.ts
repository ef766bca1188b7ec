/**
 * Run by `export_test.ts` in a process of its own: transformers.js loads ONNX Runtime itself
 * (the same 1.30 since transformers.js 4), and two loads of one native library in a process
 * are a risk not worth testing around. Loads an exported model folder with
 * transformers.js's text-generation pipeline, renders `messages` with the exported chat
 * template, generates greedily and prints the prompt's and the continuation's token ids as JSON.
 *
 * usage: deno run -A transformers_generate.ts MODEL_DIR MESSAGES_JSON MAX_NEW_TOKENS
 */

import { env, pipeline, type TextGenerationPipeline } from "@huggingface/transformers";
import { basename, dirname } from "node:path";

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
