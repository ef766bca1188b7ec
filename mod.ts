/**
 * tinkerbench: a workbench for training LLM agents with reinforcement learning through the
 * Tinker training API, with an embedded local backend that speaks the same protocol.
 *
 * @example
 * import { connectTinker, datum } from "./mod.ts";
 * const tinker = await connectTinker(); // the cloud with TINKER_API_KEY, else the local backend
 * const training = await tinker.service.createLoraTrainingClient({ baseModel: "local/tiny" });
 * await training.forwardBackward([datum([1, 2, 3], { target_tokens: [2, 3, 4], weights: [1, 1, 1] })], "cross_entropy");
 * await training.optimStep({ learning_rate: 1e-3 });
 * await tinker.close();
 *
 * @module
 */

// The Tinker client.
export * from "./lib/tinker/mod.ts";
export { connectTinker, type TinkerConnection } from "./lib/local/connect.ts";

// The embedded local backend.
export {
  defaultDataDir,
  type LocalServer,
  type LocalServerOptions,
  startLocalServer,
} from "./lib/local/server/mod.ts";
export { type FaultConfig, FaultConfigSchema } from "./lib/local/server/faults.ts";
export { findLocalModel, LOCAL_MODELS, type LocalModelSpec } from "./lib/local/models.ts";
export { type LoraSpec, type ModelConfig, ModelConfigSchema } from "./lib/local/model/config.ts";

// Wire protocol types.
export type {
  Datum,
  ForwardBackwardOutput,
  ModelInput as WireModelInput,
  SampleResponse,
  TensorData as WireTensorData,
} from "./lib/protocol/mod.ts";

// Tokenizers and supervised training.
export { ByteTokenizer } from "./lib/tokenizers/byte.ts";
export type { PromptCompletion } from "./lib/datasets/types.ts";
export { supervisedDatum, trainSupervised } from "./lib/trainer/supervised.ts";

// Advantages (RL).
export {
  type AdvantageConfig,
  AdvantageConfigSchema,
  type AdvantageResult,
  computeAdvantages,
  discountedReturns,
  type EpisodeRewards,
} from "./lib/advantages/mod.ts";

// The RL vocabulary (turn, episode, group, scored records) and the rollout store's schema.
export * from "./lib/rl/mod.ts";

// Datums (RL).
export * from "./lib/datums/mod.ts";

// Scoring: evidence (judges, hints, teacher) and pure composition per method.
export * from "./lib/scoring/mod.ts";

// Training configuration.
export {
  ConfigError,
  loadTrainConfig,
  type TrainConfig,
  TrainConfigSchema,
} from "./lib/config/mod.ts";

// Environments (GEM-style).
export * from "./lib/envs/mod.ts";

// Rollouts and the local chat format.
export * from "./lib/rollout/mod.ts";
export { ChatMLRenderer, type Message, type ParsedResponse } from "./lib/renderers/chatml.ts";

// Renderers and tokenizers of every model of the lineup, and the model table.
export {
  getRenderer,
  type Renderer,
  RENDERER_NAMES,
  type RendererOptions,
} from "./lib/renderers/mod.ts";
export { getTokenizer, prepareTokenizer, type Tokenizer } from "./lib/tokenizers/mod.ts";
export { defaultLearningRate, type ModelInfo, modelInfo, MODELS } from "./lib/models/mod.ts";

// Training: `train` at the top, the trainer's core (the loop, the source contract, prepareRun),
// and the plans and schedulers of environment runs (docs/sources.md adds a source).
export {
  type SourceStart,
  stopOnSignals,
  train,
  type TrainHooks,
  type TrainResult,
  type TrainStart,
} from "./lib/train/mod.ts";
export {
  collectOptions,
  type ExcludedGroup,
  type FailedEpisode,
  type GroupSource,
  type LoopOptions,
  openRun,
  type PreparedRun,
  prepareRun,
  type RolloutContext,
  type RunResult,
  runSteps,
  type Span,
  type StepGroups,
  type StepMetrics,
} from "./lib/trainer/mod.ts";
export {
  AsyncRollouts,
  EnvironmentMix,
  EnvironmentPlan,
  type Plan,
  type PlanEvaluationInput,
  type PlayedGroups,
  scheduleRollouts,
  SyncRollouts,
} from "./lib/sources/mod.ts";

// Types and schemas the exports above name (so each is documented where it is used).
export {
  AdvantagesSchema,
  CheckpointsSchema,
  type ConfigSources,
  EnvironmentEntrySchema,
  EvalSchema,
  JudgeSchema,
  LoggingSchema,
  OptimizerSchema,
  PipelineSchema,
  PolicySchema,
  ProxySchema,
  RolloutSchema,
  ScoringSchema,
  SplitEntrySchema,
  TeacherSchema,
} from "./lib/config/mod.ts";
export { AdvantageModeSchema, RewardReductionSchema } from "./lib/advantages/mod.ts";
export { Rng, type RngState } from "./lib/util/random.ts";
export { BYTE_SPECIAL_TOKENS, type ByteSpecialToken } from "./lib/tokenizers/byte.ts";
export type { RewardSettings } from "./lib/openreward/rewards.ts";
export type { ModelFamily, ModelStatus } from "./lib/models/mod.ts";
export type { StopOnSignals } from "./lib/train/signals.ts";
export type {
  EnvironmentPlay,
  GroupOutcome,
  MixEnvironment,
  MixGroupSpec,
  MixPlay,
  TaskPool,
} from "./lib/sources/mod.ts";
