/**
 * Writes docs/results.md from bench/results/*.json, so every measurement the docs show is a
 * number a benchmark wrote. `deno task results` rewrites the page; `--check` fails when the
 * committed page differs from what the files give (tests/docs_test.ts runs the same comparison).
 *
 * Known suites get a table each; any other file gets its headline numbers (scalar fields, nested
 * two levels at most), so a new suite shows up without a change here.
 *
 * @module
 */

import { join } from "node:path";
import { runCli, UsageError } from "../lib/cli/args.ts";

/** One results file: its name (without `.json`) and its parsed content. */
export interface ResultsFile {
  name: string;
  data: Record<string, unknown>;
}

const ROOT = new URL("..", import.meta.url).pathname;
/** Where the page is written, relative to the repository root. */
export const RESULTS_PAGE = "docs/results.md";
const RESULTS_DIR = "bench/results";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === "number" && isFinite(v) ? v : null);

/** A number as the page shows it: rates with 2 decimals, big values rounded. */
function fmt(v: unknown): string {
  const n = num(v);
  if (n === null) return v === null || v === undefined ? "–" : String(v);
  if (Number.isInteger(n)) return String(n);
  const a = Math.abs(n);
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  if (a >= 0.01) return n.toFixed(2);
  return n.toPrecision(2);
}

/** A table cell: no pipes or line breaks. */
const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();

function table(head: string[], rows: string[][]): string {
  const lines = [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
  ];
  return lines.join("\n");
}

const dateOf = (f: ResultsFile) => String(f.data.date ?? "undated").slice(0, 10);

/** `base → trained (N episodes)` from either held-out shape the benches write. */
function heldOut(h: unknown): string {
  if (!isObj(h)) return "–";
  const rate = (x: unknown) => (isObj(x) ? x.success : x);
  const episodes = h.episodes ?? (isObj(h.base) ? h.base.episodes : undefined);
  const line = `${fmt(rate(h.base))} → ${fmt(rate(h.trained))}`;
  return episodes === undefined ? line : `${line} (${episodes})`;
}

/** A `runs` list of hand runs: command, where it ran, steps, held-out line, wall (and error). */
function runsTable(runs: unknown[]): string {
  const rows = runs.filter(isObj);
  const errors = rows.some((r) => typeof r.error === "string");
  const head = ["command", "ran", "steps", "held out: base → trained (episodes)", "wall s"];
  return table(
    errors ? [...head, "error"] : head,
    rows.map((r) => {
      const row = [
        `\`${String(r.command ?? r.name ?? "")}\``,
        String(r.machine ?? ""),
        fmt(r.steps),
        heldOut(r.held_out),
        fmt(r.wall_s),
      ];
      return errors ? [...row, typeof r.error === "string" ? r.error : ""] : row;
    }),
  );
}

function examplesSection(f: ResultsFile): string {
  const rows = ((f.data.examples as unknown[]) ?? []).filter(isObj).map((e) => [
    String(e.name),
    `\`${String(e.command)}\``,
    fmt(e.steps),
    fmt(e.exit_code),
    heldOut(e.held_out),
    fmt(e.wall_s),
  ]);
  return [
    "Each shipped example, run as a user runs it (`deno task bench examples`).",
    "A row is one run in its own process on its own embedded backend.",
    "",
    table(
      ["example", "command", "steps", "exit", "held out: base → trained (episodes)", "wall s"],
      rows,
    ),
  ].join("\n");
}

function learningSection(files: ResultsFile[]): string {
  const rows: string[][] = [];
  for (const f of files) {
    const arms = isObj(f.data.arms) ? f.data.arms : {};
    for (const [arm, a] of Object.entries(arms)) {
      if (!isObj(a)) continue;
      rows.push([
        `\`${f.name}.json\``,
        dateOf(f),
        String(f.data.model ?? ""),
        arm,
        fmt(a.steps),
        fmt(num(a.seconds) === null ? null : (a.seconds as number) / 60),
        fmt(f.data.base_eval_success),
        fmt(a.eval_success),
      ]);
    }
  }
  return [
    "RL on GuessTheNumber-easy until training success reaches the goal (`deno task bench learning`).",
    "Two arms run side by side: ours (GRPO groups) and the GEM seed's algorithm.",
    "Held out is the final policy on 256 episodes the run never trained on.",
    "",
    table(["file", "date", "model", "arm", "steps", "minutes", "base", "held out"], rows),
  ].join("\n");
}

function localEngineSection(files: ResultsFile[]): string {
  const keys: [string, string][] = [
    ["train_step_lora_ms", "train step, LoRA (ms)"],
    ["train_step_full_ms", "train step, full fine-tune (ms)"],
    ["sampling_tok_s", "sampling, 16 prompts (tok/s)"],
    ["sampling_group_tok_s", "sampling, 1 prompt × 16 (tok/s)"],
  ];
  const rows: string[][] = [];
  for (const f of files) {
    for (const [key, label] of keys) {
      const m = f.data[key];
      if (!isObj(m)) continue;
      rows.push([
        `\`${f.name}.json\``,
        dateOf(f),
        label,
        fmt(m.ours),
        fmt(m.pytorch),
        fmt(m.ratio),
      ]);
    }
  }
  return [
    "The `local/bench` model beside PyTorch CPU on the same work (`deno task bench local_engine`).",
    "Ratio is ours ÷ PyTorch: lower is better for times, higher for tokens/s.",
    "",
    table(["file", "date", "measure", "ours", "PyTorch", "ratio"], rows),
  ].join("\n");
}

function rolloutSection(files: ResultsFile[]): string {
  const rows: string[][] = [];
  for (const f of files) {
    for (const l of ((f.data.levels as unknown[]) ?? []).filter(isObj)) {
      rows.push([
        `\`${f.name}.json\``,
        String(l.engine ?? ""),
        fmt(l.concurrency),
        l.prefix_cache ? "on" : "off",
        fmt(l.episodes_per_s),
      ]);
    }
  }
  return [
    "GuessTheNumber-easy episodes through `collectGroups` (`deno task bench rollout`).",
    "",
    table(["file", "engine", "in flight", "prefix cache", "episodes/s"], rows),
  ].join("\n");
}

function soakSection(files: ResultsFile[]): string {
  const rows = files.map((f) => [
    `\`${f.name}.json\``,
    dateOf(f),
    String(f.data.sampler_engine ?? "jax"),
    fmt(f.data.steps),
    fmt(f.data.rss_reference_mib),
    fmt(f.data.rss_last_mib),
    fmt(f.data.rss_growth),
  ]);
  return [
    "Resident memory over a long `combine` run (`deno task bench soak`; docs/local-memory.md).",
    "",
    table(["file", "date", "sampler", "steps", "MiB at step 10", "MiB at the end", "growth"], rows),
  ].join("\n");
}

/** Scalar leaves of an object, two levels deep, as `path: value` rows (the fallback). */
function headlineRows(data: Obj, prefix = "", depth = 0): string[][] {
  const rows: string[][] = [];
  for (const [k, v] of Object.entries(data)) {
    if (["benchmark", "date", "raw", "per_step", "curve"].includes(k)) continue;
    const path = prefix ? `${prefix}.${k}` : k;
    if (isObj(v) && depth < 2) rows.push(...headlineRows(v, path, depth + 1));
    else if (typeof v === "number" || typeof v === "boolean") rows.push([path, fmt(v)]);
    else if (typeof v === "string" && v.length <= 80) rows.push([path, v]);
  }
  return rows;
}

function genericSection(f: ResultsFile, skip: string[] = []): string {
  const parts: string[] = [];
  const data = Object.fromEntries(Object.entries(f.data).filter(([k]) => !skip.includes(k)));
  const rows = headlineRows(data);
  if (rows.length) parts.push(table(["field", "value"], rows.slice(0, 40)));
  if (rows.length > 40) parts.push(`\n${rows.length - 40} more fields are in the file.`);
  for (const [k, v] of Object.entries(data)) {
    if (isObj(v) && Array.isArray(v.runs) && v.runs.some((r) => isObj(r) && "held_out" in r)) {
      parts.push(`\n**${k}**\n\n${runsTable(v.runs)}`);
    } else if (Array.isArray(v) && v.some((r) => isObj(r) && "held_out" in r)) {
      parts.push(`\n**${k}**\n\n${runsTable(v)}`);
    }
  }
  return parts.join("\n") || "No headline numbers: see the file.";
}

/** The key of hand_runs.json that holds the search for the README's first command. */
const RECIPE_KEY = "first_command_2026_11_26";

/** The recipe search behind the README's first command (hand_runs.json). */
function recipeSection(f: ResultsFile): string {
  const search = f.data[RECIPE_KEY];
  if (!isObj(search) || !Array.isArray(search.runs)) return "";
  return [
    "How the README's first command was found, run by run.",
    "Held out is 64 episodes in the early runs, 256 later.",
    "Training every episode stayed at 0.72–0.80 held out.",
    "Down-sampling groups of 16 to the 4 most varied (`--advantages.downsample-to 4`) rose further.",
    "Runs marked parallel shared the 2 cores, so only runs alone are timings.",
    "",
    runsTable(search.runs),
  ].join("\n");
}

/** The page for these files (sorted by name), in the order a reader asks about them. */
export function renderResults(input: ResultsFile[]): string {
  const files = [...input].sort((a, b) => a.name.localeCompare(b.name));
  const taken = new Set<string>();
  const pick = (pred: (f: ResultsFile) => boolean) => {
    const out = files.filter((f) => !taken.has(f.name) && pred(f));
    out.forEach((f) => taken.add(f.name));
    return out;
  };
  const sections: [string, string][] = [];
  const add = (title: string, body: string) => body && sections.push([title, body]);
  for (const f of pick((f) => f.name === "examples")) {
    add(`Every shipped example`, examplesSection(f));
  }
  const learning = pick((f) => f.data.benchmark === "learning");
  if (learning.length) add("Learning benchmark", learningSection(learning));
  const hand = files.find((f) => f.name === "hand_runs");
  if (hand) add("How the first command was found", recipeSection(hand));
  const engine = pick((f) => f.data.benchmark === "local_engine");
  if (engine.length) add("Local engine against PyTorch", localEngineSection(engine));
  const rollout = pick((f) => f.data.benchmark === "rollout");
  if (rollout.length) add("Rollouts", rolloutSection(rollout));
  const soak = pick((f) => f.data.benchmark === "soak");
  if (soak.length) add("Memory soak", soakSection(soak));
  for (const f of pick(() => true)) {
    // The recipe search of hand_runs.json has its own section above.
    const skip = f.name === "hand_runs" ? [RECIPE_KEY] : [];
    add(`\`${f.name}.json\` (${dateOf(f)})`, genericSection(f, skip));
  }

  const out = [
    "# Measurements",
    "",
    "<!-- Generated by `deno task results` from bench/results/*.json. Do not edit by hand. -->",
    "",
    "Every number on this page comes from a file in `bench/results/`.",
    "`deno task bench <suite>` writes a file; `deno task results` rewrites this page.",
    "A test fails when the page and the files disagree.",
    "Runs replay exactly on one machine, so one run is one draw, not a spread.",
    "Held-out rates carry sampling error: about ±6 points on 64 episodes, ±3 on 256.",
    "",
    ...sections.map(([t]) => `- [${t.replace(/`/g, "")}](#${anchor(t)})`),
  ];
  for (const [title, body] of sections) out.push("", `## ${title}`, "", body);
  return out.join("\n") + "\n";
}

/** GitHub's heading anchor. */
function anchor(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-");
}

/**
 * Markdown as `deno fmt` leaves it (aligned tables, wrapped at the project's width), so the
 * committed page passes `deno task ok` and equals what this script writes.
 */
export async function formatMarkdown(text: string): Promise<string> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["fmt", `--config=${join(ROOT, "deno.json")}`, "--ext", "md", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt: ${new TextDecoder().decode(out.stderr).trim()}`);
  return new TextDecoder().decode(out.stdout);
}

/** The page as committed: rendered, then formatted. */
export async function resultsPage(root = ROOT): Promise<string> {
  return await formatMarkdown(renderResults(await readResults(root)));
}

/** Every bench/results/*.json of a checkout. */
export async function readResults(root = ROOT): Promise<ResultsFile[]> {
  const files: ResultsFile[] = [];
  for await (const e of Deno.readDir(join(root, RESULTS_DIR))) {
    if (!e.isFile || !e.name.endsWith(".json")) continue;
    const data = JSON.parse(await Deno.readTextFile(join(root, RESULTS_DIR, e.name)));
    if (isObj(data)) files.push({ name: e.name.replace(/\.json$/, ""), data });
  }
  return files;
}

if (import.meta.main) {
  await runCli(async () => {
    const unknown = Deno.args.filter((a) => a !== "--check");
    if (unknown.length) throw new UsageError(`unknown argument ${unknown[0]}`);
    const page = await resultsPage();
    const path = join(ROOT, RESULTS_PAGE);
    if (Deno.args.includes("--check")) {
      const committed = await Deno.readTextFile(path).catch(() => "");
      if (committed !== page) {
        throw new Error(`${RESULTS_PAGE} is not what bench/results/ gives: run deno task results`);
      }
      console.log(`${RESULTS_PAGE} matches bench/results/`);
    } else {
      await Deno.writeTextFile(path, page);
      console.log(`wrote ${RESULTS_PAGE} from ${RESULTS_DIR}/`);
    }
  }, {
    run: "deno task results",
    about: "Writes docs/results.md from bench/results/*.json: a table per benchmark suite, and " +
      "the headline numbers of any other results file.",
    usage: "usage: deno task results [--check]\n" +
      "  --check  write nothing; exit 1 when the committed page differs from the files",
  });
}
