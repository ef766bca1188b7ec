/**
 * Images in messages: the vision renderers place them as tinker-cookbook's do (Qwen3.5/3.6/3.8
 * `<|vision_start|>…<|vision_end|>`, Kimi K2.5/K2.6 `<|media_begin|>image<|media_content|>…
 * <|media_end|>\n`) and send them as the wire's image chunks; other renderers refuse them; the
 * proxy turns OpenAI's `image_url` parts into image parts.
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { InputChunk, Message } from "../../lib/renderers/types.ts";
import { ModelInputSchema } from "../../lib/protocol/types.ts";
import { parseChatRequest } from "../../lib/proxy/request.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const tokenizer = loadQwen3Tokenizer();
const LOOK: Message[] = [{
  role: "user",
  content: "What is this? Describe.",
  parts: [
    { type: "text", text: "What is this?" },
    { type: "image", data: PNG, format: "png" },
    { type: "text", text: " Describe." },
  ],
}];
const texts = (chunks: InputChunk[]) =>
  chunks.map((c) => c.type === "encoded_text" ? tokenizer.decode(c.tokens) : `[${c.format}]`);

Deno.test("images: Qwen3.5 places an image between <|vision_start|> and <|vision_end|>, as an image chunk", () => {
  const r = getRenderer("Qwen/Qwen3.5-4B", { tokenizer, enableThinking: true });
  const chunks = r.buildGenerationInput(LOOK);
  assert.deepEqual(texts(chunks), [
    "<|im_start|>user\nWhat is this?<|vision_start|>",
    "[png]",
    "<|vision_end|> Describe.<|im_end|>\n<|im_start|>assistant\n<think>\n",
  ]);
  assert.deepEqual(chunks[1], { type: "image", data: PNG, format: "png" });
  ModelInputSchema.parse({ chunks }); // the wire's (and the SDK's) ModelInput
  assert.throws(() => r.buildGenerationPrompt(LOOK), /token ids cannot carry images/);
  assert.throws(() => r.buildSupervisedExample(LOOK), /supervised examples with images/);
});

Deno.test("images: Qwen3.8 places an image as Qwen3.5 does (the same vision markup)", () => {
  const r = getRenderer("Qwen/Qwen3.8-27B", { tokenizer, renderer: "qwen3_8_medium_reasoning" });
  assert.deepEqual(texts(r.buildGenerationInput(LOOK)), [
    "<|im_start|>user\nWhat is this?<|vision_start|>",
    "[png]",
    "<|vision_end|> Describe.<|im_end|>\n<|im_start|>assistant\n<think>\n",
  ]);
});

Deno.test("images: Kimi K2.6 wraps one in its media markup; text-only formats refuse them in one line", () => {
  const kimi = getRenderer("moonshotai/Kimi-K2.6", { tokenizer, renderer: "kimi_k26" });
  const out = texts(kimi.buildGenerationInput(LOOK));
  assert.equal(out[1], "[png]");
  assert.ok(out[0].endsWith("What is this?<|media_begin|>image<|media_content|>"), out[0]);
  assert.ok(out[2].startsWith("<|media_end|>\n Describe.<|im_end|>"), out[2]);
  for (const name of ["nemotron3", "qwen3", "chatml"]) {
    const r = getRenderer("Qwen/Qwen3-8B", { tokenizer, renderer: name });
    assert.throws(
      () => r.buildGenerationPrompt(LOOK),
      /takes no images: a message has an image part$/,
    );
  }
  assert.throws(
    () =>
      getRenderer("Qwen/Qwen3.5-4B", { tokenizer, renderer: "nemotron3" }).buildGenerationInput(
        LOOK,
      ),
    /takes no images/,
  );
});

Deno.test("images: the proxy turns OpenAI image_url parts into image parts; a URL it would fetch is a 400", () => {
  const req = parseChatRequest({
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    }],
  }, { maxN: 1 });
  assert.deepEqual(req.messages[0].parts, [
    { type: "text", text: "What is this?" },
    { type: "image", format: "png", data: PNG },
  ]);
  assert.throws(
    () =>
      parseChatRequest({
        model: "m",
        messages: [{
          role: "user",
          content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }],
        }],
      }, { maxN: 1 }),
    /an image_url must be a data: URL of a PNG or JPEG image/,
  );
});
