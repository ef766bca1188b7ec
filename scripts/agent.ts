/**
 * `deno task agent`: the reference agent (lib/proxy/agent.ts) plays an environment through an
 * OpenAI-compatible endpoint, usually the proxy of `deno task train --source proxy`, with the
 * official `openai` client: observation as user message, feedback as the next user message, the
 * environment's reward as `X-Turn-Reward`.
 */

import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import { make, UnknownEnvError } from "../lib/envs/registry.ts";
import { runAgent } from "../lib/proxy/agent.ts";

const ABOUT =
  "Plays an environment with the reference agent through an OpenAI-compatible endpoint (usually the " +
  "proxy of `deno task train --source proxy`), sending each turn's reward as X-Turn-Reward.";

const USAGE = `usage: deno task agent [--env-id game:GuessTheNumber-v0-easy]
                       [--base-url http://127.0.0.1:30000/v1] [--episodes 16] [--concurrency 4]
                       [--model NAME] [--api-key KEY] [--seed 0] [--temperature X]
                       [--max-tokens N] [--no-rewards] [--stream]`;

const Flags = z.object({
  "env-id": z.string().min(1).default("game:GuessTheNumber-v0-easy"),
  "base-url": z.url().default("http://127.0.0.1:30000/v1"),
  episodes: z.coerce.number().int().min(1).default(16),
  concurrency: z.coerce.number().int().min(1).max(1024).default(4),
  model: z.string().min(1).optional(),
  "api-key": z.string().min(1).optional(),
  seed: z.coerce.number().int().default(0),
  temperature: z.coerce.number().min(0).max(2).optional(),
  "max-tokens": z.coerce.number().int().min(1).optional(),
  "no-rewards": z.boolean().default(false),
  stream: z.boolean().default(false),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    "env-id": { type: "string" },
    "base-url": { type: "string" },
    episodes: { type: "string" },
    concurrency: { type: "string" },
    model: { type: "string" },
    "api-key": { type: "string" },
    seed: { type: "string" },
    temperature: { type: "string" },
    "max-tokens": { type: "string" },
    "no-rewards": { type: "boolean" },
    stream: { type: "boolean" },
  }, Flags);
  try {
    make(flags["env-id"]);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new UsageError(`--env-id: ${e.message}`);
    throw e;
  }
  const bar = new ProgressBar("episodes", flags.episodes);
  let done = 0, solved = 0, reward = 0, errors = 0;
  let firstError: string | undefined;
  let episodes;
  try {
    episodes = await runAgent({
      envId: flags["env-id"],
      baseUrl: flags["base-url"],
      apiKey: flags["api-key"] ?? Deno.env.get("SGLANG_API_KEY"),
      model: flags.model,
      episodes: flags.episodes,
      concurrency: flags.concurrency,
      seed: flags.seed,
      temperature: flags.temperature,
      maxTokens: flags["max-tokens"],
      sendRewards: !flags["no-rewards"],
      stream: flags.stream,
      onEpisode: (e) => {
        done++;
        if (e.success) solved++;
        if (e.error) errors++;
        firstError ??= e.error;
        reward += e.totalReward;
        bar.update(done, { reward: reward / done, success: solved / done, errors });
      },
    });
  } catch (e) {
    // The endpoint cannot be reached or refuses the key: one line, not a stack trace.
    throw new UsageError(`--base-url ${flags["base-url"]}: ${(e as Error).message}`);
  }
  bar.done();
  console.log(
    `${episodes.length} episodes: mean reward ${(reward / episodes.length).toFixed(3)}, solved ` +
      `${solved}/${episodes.length}${errors ? `, ${errors} failed (first: ${firstError})` : ""}`,
  );
}, { run: "deno task agent", about: ABOUT, usage: USAGE });
