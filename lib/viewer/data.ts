/**
 * What the run viewer shows, read from run directories: the metric rows and their figures, the
 * held-out evaluation, and every episode of `rollouts/iteration_*.jsonl` with its sampled tokens
 * decoded to text (the record keeps token ids; the page has no tokenizer).
 *
 * Records are read defensively: fields the viewer does not know ride along untouched (the page
 * shows `excluded` and `error` when a record has them), and a line that is not a record is
 * counted in the run's notes instead of dropped without a word.
 *
 * @module
 */

import { basename } from "node:path";
import { z } from "zod";
import { type PlotlyFigure, timelineFigure, type TimingSpan } from "../viz/mod.ts";
import {
  type HeldOutEvaluation,
  heldOutLine,
  readEvaluation,
  readJsonFile,
  readJsonl,
  readStepMetrics,
  rolloutFileStep,
  rolloutsPath,
  RUN_FILES,
  runPath,
} from "../rundir/mod.ts";
import { getTokenizer } from "../tokenizers/mod.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { comparisonFigures, heldOutFigure, runFigures } from "./charts.ts";
import { type RunSettings, runSettings } from "./settings.ts";

/** An episode as the page gets it: the rollout record, token ids replaced by their texts. */
export type ViewerEpisode = Record<string, unknown> & { step: number };

/** One run of the viewer. */
export interface ViewerRun {
  /** The run's name (its folder's). */
  name: string;
  /** The run's method (`rl`, `opd`, `combine`) and model, from `config.json` when it has one. */
  method: string | null;
  /** The policy's base model, from `config.json`. */
  model: string | null;
  /** Steps completed. */
  steps: number;
  /** Its held-out evaluation (null: none). */
  evaluation: HeldOutEvaluation | null;
  /** Its episodes, from the rollout store. */
  episodes: ViewerEpisode[];
  /** The run's scoring settings and loss (the what-if starts from them); null without a config. */
  settings?: RunSettings | null;
}

/** Everything the page draws, embedded in it as JSON. */
export interface ViewerData {
  /** The page's title. */
  title: string;
  /** Notes shown above the charts (e.g. runs that could not be read). */
  notes: string[];
  /** The charts. */
  figures: PlotlyFigure[];
  /** The runs. */
  runs: ViewerRun[];
  /** Served by `report --serve`: the page polls for new steps. */
  live: boolean;
}

const ConfigSchema = z.object({
  policy: z.object({ model: z.string(), tokenizer: z.string().nullish() }).partial(),
  scoring: z.object({ method: z.string() }).partial(),
}).partial();

/** Options of {@link loadViewerData}. */
export interface LoadOptions {
  /** Only episodes of steps after this one (live updates). */
  afterStep?: number;
  /** Mark the data live (`report --serve`). */
  live?: boolean;
}

/**
 * Reads run directories into the viewer's data: one run gets its own charts, timeline and
 * held-out bars; several get comparison charts. Only steps with a metrics row are read, so a
 * step whose records are still being written shows up on the next poll, whole.
 *
 * @example
 * const data = await loadViewerData([".tinkerbench/runs/rl-demo"]);
 */
export async function loadViewerData(dirs: string[], o: LoadOptions = {}): Promise<ViewerData> {
  const notes: string[] = [];
  const runs = await Promise.all(dirs.map(async (dir) => {
    // Served live, a run that has not finished its first step yet has no metrics file.
    if (!o.live && !(await exists(runPath(dir, "metrics")))) {
      throw new Error(`metrics file not found in ${basename(dir)}`);
    }
    const skipped: string[] = [];
    const rows = await readStepMetrics(dir, skipped);
    notes.push(...skipped.map((s) => `${basename(dir)}: ${s}`));
    const config = await readConfig(dir);
    const lastStep = Math.max(0, ...rows.map((r) => Number(r.step)).filter(Number.isFinite));
    const tokenizer = tokenizerOf(config, dir, notes);
    const episodes = await readEpisodes(dir, { after: o.afterStep ?? 0, upTo: lastStep }, {
      tokenizer,
      notes,
    });
    const run: ViewerRun = {
      name: basename(dir),
      method: config?.scoring?.method ?? null,
      model: config?.policy?.model ?? null,
      steps: rows.length,
      evaluation: await readEvaluation(dir),
      episodes,
      settings: runSettings(await readJson(runPath(dir, "config"))),
    };
    return { run, rows, dir };
  }));
  let figures: PlotlyFigure[];
  const evals = runs.flatMap(({ run }) =>
    run.evaluation ? [{ name: run.name, evaluation: run.evaluation }] : []
  );
  const evalFigure = evals.length ? [heldOutFigure(evals)] : [];
  for (const { run } of runs) {
    if (run.evaluation) {
      notes.push(`${runs.length > 1 ? `${run.name}: ` : ""}${heldOutLine(run.evaluation)}`);
    }
  }
  if (runs.length === 1) {
    const skipped: string[] = [];
    const spans = await readJsonl<TimingSpan>(runPath(runs[0].dir, "spans"), { skipped });
    notes.push(...skipped);
    figures = [
      ...evalFigure,
      ...runFigures(runs[0].rows),
      ...(spans.length ? [timelineFigure(spans)] : []),
    ];
  } else {
    const cmp = comparisonFigures(runs.map(({ run, rows }) => ({ name: run.name, rows })));
    notes.push(...cmp.notes);
    const without = runs.filter(({ run }) => !run.evaluation).map(({ run }) => run.name);
    if (evals.length && without.length) {
      notes.push(`held-out success: no ${RUN_FILES.evaluation} in ${without.join(", ")}`);
    }
    figures = [...evalFigure, ...cmp.figures];
  }
  const title = runs.length === 1
    ? `${runs[0].run.name}: ${runs[0].run.steps} steps`
    : runs.map(({ run }) => run.name).join(" vs ");
  return { title, notes, figures, runs: runs.map(({ run }) => run), live: o.live ?? false };
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch {
    return null;
  }
}

async function readConfig(dir: string): Promise<z.infer<typeof ConfigSchema> | null> {
  try {
    const parsed = ConfigSchema.safeParse(await readJsonFile(runPath(dir, "config")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function tokenizerOf(
  config: z.infer<typeof ConfigSchema> | null,
  dir: string,
  notes: string[],
): Tokenizer | null {
  const name = config?.policy?.tokenizer ?? config?.policy?.model;
  if (!name) return null;
  try {
    return getTokenizer(name);
  } catch (e) {
    notes.push(`${basename(dir)}: tokens shown as ids (${(e as Error).message})`);
    return null;
  }
}

/**
 * The episodes of steps in (after, upTo] from `rollouts/iteration_*.jsonl`, in step order.
 * Lines that are not JSON objects with a step and turns are counted in `notes`.
 */
export async function readEpisodes(
  dir: string,
  { after = 0, upTo = Infinity }: { after?: number; upTo?: number } = {},
  { tokenizer = null, notes = [] }: { tokenizer?: Tokenizer | null; notes?: string[] } = {},
): Promise<ViewerEpisode[]> {
  const files: { step: number; path: string }[] = [];
  try {
    for await (const e of Deno.readDir(runPath(dir, "rollouts"))) {
      const step = rolloutFileStep(e.name);
      if (step !== null && step > after && step <= upTo) {
        files.push({ step, path: rolloutsPath(dir, step) });
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    return [];
  }
  files.sort((a, b) => a.step - b.step);
  const decode = tokenTexts(tokenizer);
  const out: ViewerEpisode[] = [];
  let bad = 0;
  for (const { step, path } of files) {
    const skipped: string[] = [];
    const rows = await readJsonl(path, { skipped });
    notes.push(...skipped.map((s) => `${basename(dir)}: ${s}`));
    const eps = recordsToEpisodes(rows, { tokenizer, step, decode });
    bad += rows.length - eps.length;
    out.push(...eps);
  }
  if (bad) notes.push(`${basename(dir)}: ${bad} rollout lines are not episode records (left out)`);
  return out;
}

/**
 * Rollout records (as written, or as {@link rolloutRecords} makes them in memory) as the
 * viewer's episodes: token ids decoded with `tokenizer`. Values that are not records (no
 * `turns` array) are left out; compare the lengths to count them.
 */
export function recordsToEpisodes(
  rows: unknown[],
  { tokenizer = null, step = 0, decode = tokenTexts(tokenizer) }: {
    tokenizer?: Tokenizer | null;
    step?: number;
    decode?: (id: number) => string;
  } = {},
): ViewerEpisode[] {
  return rows.flatMap((row) => {
    if (!row || typeof row !== "object" || !Array.isArray((row as { turns?: unknown }).turns)) {
      return [];
    }
    const r = row as Record<string, unknown> & { turns: unknown[] };
    return [{
      ...r,
      step: typeof r.step === "number" ? r.step : step,
      turns: r.turns.map((t) => withTokenTexts(t, decode)),
    }];
  });
}

/**
 * The viewer's data of episodes held in memory (a notebook's), with no charts: `records` as
 * {@link rolloutRecords} makes them.
 *
 * @example
 * const data = episodesViewerData("notebook 01", rolloutRecords(0, scored, ok), tokenizer);
 */
export function episodesViewerData(
  name: string,
  records: unknown[],
  tokenizer: Tokenizer | null,
  { method = null, model = null }: { method?: string | null; model?: string | null } = {},
): ViewerData {
  const episodes = recordsToEpisodes(records, { tokenizer });
  return {
    title: name,
    notes: [],
    figures: [],
    runs: [{ name, method, model, steps: 0, evaluation: null, episodes }],
    live: false,
  };
}

/**
 * A turn whose `tokens.ids` became `tokens.text` (one string per sampled token), its per-token
 * numbers kept to 5 significant digits: the page shows 4 decimals, and full doubles made up
 * over half of a report's bytes.
 */
function withTokenTexts(turn: unknown, decode: (id: number) => string): unknown {
  const t = turn as { tokens?: { ids?: unknown } };
  if (!t || typeof t !== "object" || !t.tokens || !Array.isArray(t.tokens.ids)) return turn;
  const { ids, ...rest } = t.tokens as { ids: number[] } & Record<string, unknown>;
  const short = Object.fromEntries(
    Object.entries(rest).map(([k, v]) => [k, Array.isArray(v) ? v.map(round5) : v]),
  );
  return { ...t, tokens: { ...short, text: ids.map(decode) } };
}

function round5(x: unknown): unknown {
  return typeof x === "number" && Number.isFinite(x) ? Number(x.toPrecision(5)) : x;
}

function tokenTexts(tokenizer: Tokenizer | null): (id: number) => string {
  const cache = new Map<number, string>();
  return (id) => {
    let s = cache.get(id);
    if (s === undefined) {
      s = tokenizer ? tokenizer.decode([id]) : `[${id}]`;
      cache.set(id, s);
    }
    return s;
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
