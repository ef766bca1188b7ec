import { assert } from "../assert.ts";
import {
  defaultLearningRate,
  defaultRenderer,
  modelInfo,
  MODELS,
  modelsMarkdown,
} from "../../lib/models/mod.ts";
import { resolveLearningRate, TrainConfigSchema } from "../../lib/config/schema.ts";
import { getRenderer, RENDERER_NAMES } from "../../lib/renderers/mod.ts";

/** Tinker's live lineup (tinker-cookbook `skills/research/references/models.md`, 2026-07). */
const LIVE = [
  "thinkingmachines/Inkling",
  "thinkingmachines/Inkling-Small",
  "Qwen/Qwen3.8-27B",
  "Qwen/Qwen3.6-35B-A3B",
  "Qwen/Qwen3.6-27B",
  "Qwen/Qwen3.5-397B-A17B",
  "Qwen/Qwen3.5-35B-A3B-Base",
  "Qwen/Qwen3.5-9B",
  "Qwen/Qwen3.5-9B-Base",
  "Qwen/Qwen3.5-4B",
  "Qwen/Qwen3-8B",
  "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
  "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
  "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
  "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
  "openai/gpt-oss-120b",
  "openai/gpt-oss-20b",
  "deepseek-ai/DeepSeek-V3.1",
  "moonshotai/Kimi-K2.6",
];

Deno.test("model table: the live lineup is Tinker's 19 models; Llama and Kimi K2/K2.5 are retired", () => {
  assert.deepEqual(MODELS.filter((m) => m.status === "live").map((m) => m.name), LIVE);
  for (const name of ["meta-llama/Llama-3.1-8B-Instruct", "moonshotai/Kimi-K2.5"]) {
    assert.equal(modelInfo(name)?.status, "retired", name);
  }
  assert.equal(modelInfo("moonshotai/Kimi-K2-Thinking")?.status, "retired");
  assert.equal(new Set(MODELS.map((m) => m.name)).size, MODELS.length);
  assert.ok(MODELS.filter((m) => m.base).every((m) => m.renderer === "role_colon" && !m.vision));
  for (const m of MODELS) {
    for (const r of [m.renderer, m.noThinkingRenderer ?? m.renderer]) {
      assert.ok(RENDERER_NAMES.includes(r), `${m.name}: renderer ${r} is registered`);
    }
  }
});

Deno.test("model table: the README's supported-models table is the generated one", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const section = /<!-- models:start -->\n\n([^]*?)\n\n<!-- models:end -->/.exec(readme);
  assert.ok(section, "README.md has the <!-- models:start --> … <!-- models:end --> section");
  assert.equal(section[1], modelsMarkdown(), "regenerate with `deno task models --markdown`");
});

Deno.test("model table: the learning rate a run uses by default is the table's", () => {
  const lr = (model: string) => resolveLearningRate(TrainConfigSchema.parse({ policy: { model } }));
  for (const m of MODELS) assert.equal(lr(m.name), m.lr, m.name);
  assert.equal(defaultLearningRate("Qwen/Qwen3-8B"), 1e-4);
  assert.equal(lr("local/games2"), 1e-3);
  assert.equal(lr("acme/served-elsewhere"), 1e-4);
  const set = TrainConfigSchema.parse({ policy: { model: "Qwen/Qwen3-8B" } });
  set.optimizer.learning_rate = 3e-5;
  assert.equal(resolveLearningRate(set), 3e-5);
});

Deno.test("model table: hybrid models render without thinking unless asked", () => {
  const qwen = modelInfo("Qwen/Qwen3-8B")!;
  assert.equal(defaultRenderer(qwen, false), "qwen3_disable_thinking");
  assert.equal(defaultRenderer(qwen, true), "qwen3");
  const oss = modelInfo("openai/gpt-oss-20b")!;
  assert.equal(defaultRenderer(oss, false), "gpt_oss_no_sysprompt");
  assert.equal(modelInfo("deepseek-ai/DeepSeek-V3.1")!.renderer, "deepseekv3_thinking");
});

Deno.test("getRenderer: --renderer overrides the table; unknown names say what is known", () => {
  const r = getRenderer("meta-llama/Llama-3.1-8B", { renderer: "llama3" });
  assert.equal(r.constructor.name, "Llama3Renderer");
  assert.throws(
    () => getRenderer("Qwen/Qwen3-8B", { renderer: "qwen9" }),
    /^Error: unknown renderer "qwen9": known are qwen3, .*role_colon/,
  );
  assert.throws(() => getRenderer("acme/unknown"), /not in the model table.*--renderer NAME/);
});

Deno.test("getRenderer: Inkling's tml_v0 says in one line that its format cannot be had here", () => {
  assert.throws(
    () => getRenderer("thinkingmachines/Inkling"),
    /^Error: no renderer for thinkingmachines\/Inkling: Inkling's format \(tml_v0[^\n]*cannot be learned from public sources here$/,
  );
});
