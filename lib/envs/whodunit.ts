/**
 * WhoDunIt, a deduction game in the spirit of OpenReward's `GeneralReasoning/WhoDunit`: a murder
 * case generated from a seed, examined through tools (`list_suspects`, `list_weapons`,
 * `list_locations`, `list_clues`, `list_statements`, `list_exhibits`, `view_exhibit`, and on
 * the hard level `list_motives`) and closed with one `submit_answer`.
 *
 * Every innocent suspect, unused weapon, other room (and, on the hard level, false motive) is
 * cleared by exactly one reliable fact, placed at random among the clues, the witness statements
 * and the exhibits (whose text is only shown by `view_exhibit`), with a few facts that clear
 * nothing in between; so exactly one answer fits, and finding it takes reading every source.
 * The reward is partial credit: 1/3 per part right (1/4 with the motive), by case-insensitive
 * exact match (a leading "the" ignored), and the submission ends the episode.
 *
 * @module
 */

import { z } from "zod";
import { Rng } from "../util/random.ts";
import {
  defineTool,
  seededTasks,
  textBlock,
  textOutput,
  type ToolEnvironment,
  type ToolOutput,
  toolSession,
} from "./tool_env.ts";

/** Sizes of a level: items per category, whether the motive is asked. */
export const WHODUNIT_LEVELS = {
  easy: { items: 4, motive: false, maxTurns: 20 },
  hard: { items: 5, motive: true, maxTurns: 26 },
} as const;

/** A level of the game. */
export type WhoDunItLevel = keyof typeof WHODUNIT_LEVELS;

const SUSPECTS = [
  ["Colonel Ashford", "a retired army officer"],
  ["Dr. Beatrice Hale", "the family physician"],
  ["Clara Voss", "the governess"],
  ["Desmond Reyes", "the butler"],
  ["Lady Evelyn Marsh", "the victim's widowed sister"],
  ["Felix Grant", "the victim's nephew"],
  ["Gwen Porter", "the cook"],
  ["Harold Finch", "the gardener"],
  ["Iris Kemp", "the victim's secretary"],
  ["Jasper Lowe", "the family solicitor"],
  ["Katherine Moore", "an art dealer"],
  ["Leo Nash", "the chauffeur"],
] as const;
const WEAPONS = [
  "candlestick",
  "rope",
  "revolver",
  "lead pipe",
  "dagger",
  "wrench",
  "poison vial",
  "fireplace poker",
  "letter opener",
  "garden shears",
] as const;
const LOCATIONS = [
  "library",
  "conservatory",
  "kitchen",
  "study",
  "ballroom",
  "billiard room",
  "wine cellar",
  "greenhouse",
  "dining room",
  "attic",
] as const;
const MOTIVES = [
  "inheritance",
  "blackmail",
  "jealousy",
  "revenge",
  "gambling debts",
  "a stolen manuscript",
  "a broken engagement",
  "a business rivalry",
] as const;
const VICTIMS = [
  "Lord Edmund Blackwood",
  "Sir Reginald Thorne",
  "Mrs. Agatha Wren",
  "Professor Julian Crane",
  "Lady Margaret Holloway",
] as const;
const HOUSES = ["Ravenscroft Manor", "Thornfield Hall", "Larkspur House", "Greywater Abbey"];
const WITNESSES = ["the maid", "the night porter", "the vicar", "the stable boy", "a neighbour"];
const ELSEWHERE = [
  "at the village pub",
  "on the last train to London",
  "at the vicarage",
  "at the cottage hospital",
  "at the hunt ball in the next county",
];

/** Facts that clear one item, per category; `{x}` is the item, `{w}` a place elsewhere. */
const CLEARING = {
  suspect: [
    "{x} was {w} from eight o'clock until long after midnight, as several people confirm.",
    "{x} never left the drawing room all evening; three guests sat with them throughout.",
    "{x} was ill in bed all night, and the nurse never left their side.",
  ],
  weapon: [
    "The {x} was locked in the display cabinet all night; its seal is unbroken.",
    "The {x} had been sent away for repair a week before the murder.",
    "The {x} was examined and carries no trace of blood, fibre or fingerprint.",
  ],
  location: [
    "The {x} was locked all evening, and its only key lay in the safe.",
    "Guests sat in the {x} all evening, and no one else came in.",
    "The {x} had just been waxed, and its floor shows no footprint at all.",
  ],
  motive: [
    "The matter of {x} was settled amicably a year ago and gave no one a reason to kill.",
    "The police established that {x} had nothing to do with the victim.",
  ],
} as const;
const NEUTRAL = [
  "The victim was last seen alive at nine o'clock.",
  "A dog barked near the house at half past ten.",
  "It rained heavily from eleven o'clock onwards.",
  "The telephone line to the house was working all night.",
  "The victim had dined alone and retired early.",
];
const EXHIBIT_NAMES = [
  "Police report",
  "Forensic note",
  "Housekeeper's log",
  "Telegram",
  "Train ticket",
  "Photograph",
  "Diary page",
  "Locksmith's statement",
];

/** A generated case. */
export interface WhoDunItCase {
  /** Who was killed. */
  victim: string;
  /** Where the case takes place. */
  house: string;
  /** The suspects and their roles. */
  suspects: { name: string; role: string }[];
  /** The possible weapons. */
  weapons: string[];
  /** The possible rooms. */
  locations: string[];
  /** The possible motives. */
  motives: string[];
  /** What the investigation found. */
  clues: string[];
  /** What the suspects said. */
  statements: string[];
  /** The documents of the case, by id. */
  exhibits: { id: string; title: string; text: string }[];
  /** Who did it, with what, where (and why). */
  solution: { suspect: string; weapon: string; location: string; motive?: string };
}

function pick<T>(rng: Rng, xs: readonly T[], n: number): T[] {
  const pool = [...xs];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

/**
 * The case of a seed: the same seed, the same case.
 *
 * @example
 * const c = generateCase(7, "easy");
 * c.solution; // { suspect: "…", weapon: "…", location: "…" }
 */
export function generateCase(seed: number, level: WhoDunItLevel): WhoDunItCase {
  const rng = new Rng(seed);
  const { items, motive } = WHODUNIT_LEVELS[level];
  const suspects = pick(rng, SUSPECTS, items).map(([name, role]) => ({ name, role }));
  const weapons = pick(rng, WEAPONS, items);
  const locations = pick(rng, LOCATIONS, items);
  const motives = motive ? pick(rng, MOTIVES, items) : [];
  const solution = {
    suspect: suspects[rng.int(items)].name,
    weapon: weapons[rng.int(items)],
    location: locations[rng.int(items)],
    ...(motive ? { motive: motives[rng.int(items)] } : {}),
  };
  const fill = (t: string, x: string) =>
    t.replace("{x}", x).replace("{w}", ELSEWHERE[rng.int(ELSEWHERE.length)]);
  const facts: string[] = [];
  const clear = (kind: keyof typeof CLEARING, xs: string[], answer: string | undefined) => {
    for (const x of xs) {
      if (x !== answer) facts.push(fill(CLEARING[kind][rng.int(CLEARING[kind].length)], x));
    }
  };
  clear("suspect", suspects.map((s) => s.name), solution.suspect);
  clear("weapon", weapons, solution.weapon);
  clear("location", locations, solution.location);
  if (motive) clear("motive", motives, solution.motive);
  // Facts start with "The {weapon}" or a name; capitalise after filling in.
  const all = [...facts, ...pick(rng, NEUTRAL, 2 + rng.int(2))].map((f) =>
    f[0].toUpperCase() + f.slice(1)
  );
  const sources: { clues: string[]; statements: string[]; exhibits: string[] } = {
    clues: [],
    statements: [],
    exhibits: [],
  };
  const kinds = ["clues", "statements", "exhibits"] as const;
  for (const [i, f] of pick(rng, all, all.length).entries()) {
    // The first three go one to each source, so none is empty; the rest at random.
    sources[i < 3 ? kinds[i] : kinds[rng.int(3)]].push(f);
  }
  const names = pick(rng, EXHIBIT_NAMES, EXHIBIT_NAMES.length);
  return {
    victim: VICTIMS[rng.int(VICTIMS.length)],
    house: HOUSES[rng.int(HOUSES.length)],
    suspects,
    weapons,
    locations,
    motives,
    clues: sources.clues,
    statements: sources.statements.map((s) =>
      `${capitalise(WITNESSES[rng.int(WITNESSES.length)])}: "${s}"`
    ),
    exhibits: sources.exhibits.map((text, i) => ({
      id: `E${i + 1}`,
      title: names[i % names.length],
      text,
    })),
    solution,
  };
}

function capitalise(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}

/** An answer as compared: case-insensitive, spaces collapsed, a leading "the" ignored. */
export function normaliseAnswer(s: string): string {
  return s.trim().toLowerCase().replace(/\s+/g, " ").replace(/^the /, "");
}

/** Partial credit of an answer: the share of its parts that match the solution. */
export function scoreAnswer(
  c: WhoDunItCase,
  answer: { suspect: string; weapon: string; location: string; motive?: string },
): { reward: number; right: string[]; wrong: string[] } {
  const parts = (["suspect", "weapon", "location", "motive"] as const).filter((p) =>
    c.solution[p] !== undefined
  );
  const right = parts.filter((p) =>
    normaliseAnswer(answer[p] ?? "") === normaliseAnswer(c.solution[p]!)
  );
  return {
    reward: right.length / parts.length,
    right,
    wrong: parts.filter((p) => !right.includes(p)),
  };
}

class Investigation {
  closed = false;
  constructor(readonly c: WhoDunItCase) {}
}

const NO_ARGS = z.object({});
const list = (name: string, description: string, lines: (c: WhoDunItCase) => string[]) =>
  defineTool(
    name,
    description,
    NO_ARGS,
    (inv: Investigation) => textOutput(lines(inv.c).join("\n") || "(nothing)"),
  );

const LIST_TOOLS = [
  list("list_suspects", "List the suspects.", (c) => c.suspects.map((s) => `${s.name}, ${s.role}`)),
  list("list_weapons", "List the possible weapons.", (c) => c.weapons),
  list("list_locations", "List the rooms where it may have happened.", (c) => c.locations),
  list("list_clues", "List the clues found by the police.", (c) => c.clues),
  list("list_statements", "List the witness statements.", (c) => c.statements),
  list(
    "list_exhibits",
    "List the exhibits (view one with view_exhibit).",
    (c) => c.exhibits.map((e) => `${e.id}: ${e.title}`),
  ),
];
const LIST_MOTIVES = list("list_motives", "List the possible motives.", (c) => c.motives);
const VIEW_EXHIBIT = defineTool(
  "view_exhibit",
  "Read an exhibit.",
  z.object({ exhibit_id: z.string().describe("The exhibit's id, e.g. E1") }),
  (inv: Investigation, { exhibit_id }) => {
    const e = inv.c.exhibits.find((x) => x.id.toLowerCase() === exhibit_id.trim().toLowerCase());
    return textOutput(
      e ? `${e.id} (${e.title}): ${e.text}` : `No exhibit ${JSON.stringify(exhibit_id)}.`,
    );
  },
);

function submit(inv: Investigation, a: Parameters<typeof scoreAnswer>[1]): ToolOutput {
  if (inv.closed) return textOutput("The case is already closed.", { finished: true });
  inv.closed = true;
  const { reward, right, wrong } = scoreAnswer(inv.c, a);
  const says = `${right.length} of ${right.length + wrong.length} parts right` +
    (wrong.length ? ` (wrong: ${wrong.join(", ")})` : "");
  return textOutput(`The case is closed: ${says}.`, {
    reward,
    finished: true,
    metadata: { right, wrong },
  });
}

const ANSWER = {
  suspect: z.string().describe("The murderer's name"),
  weapon: z.string().describe("The weapon"),
  location: z.string().describe("The room"),
};
const SUBMIT = defineTool(
  "submit_answer",
  "Name the murderer, the weapon and the room (one try; it closes the case).",
  z.object(ANSWER),
  submit,
);
const SUBMIT_WITH_MOTIVE = defineTool(
  "submit_answer",
  "Name the murderer, the weapon, the room and the motive (one try; it closes the case).",
  z.object({ ...ANSWER, motive: z.string().describe("The motive") }),
  submit,
);

/** Tasks per split. */
export const WHODUNIT_TASKS = { train: 100_000, test: 1_000 } as const;
const TEST_SALT = 0xd00d;

/**
 * WhoDunIt at a level, as a tool environment (`whodunit-v0-easy`, `whodunit-v0-hard`).
 *
 * @example
 * const env = new ToolTaskEnv(localTasks(whoDunIt("easy")));
 */
export function whoDunIt(level: WhoDunItLevel): ToolEnvironment {
  const { motive, maxTurns } = WHODUNIT_LEVELS[level];
  const tools = [...LIST_TOOLS, ...(motive ? [LIST_MOTIVES] : []), VIEW_EXHIBIT];
  const submitTool = motive ? SUBMIT_WITH_MOTIVE : SUBMIT;
  return {
    name: `whodunit-v0-${level}`,
    description: `A murder case to solve with ${tools.length + 1} tools (${level})`,
    ...seededTasks(WHODUNIT_TASKS, TEST_SALT),
    tools: [...tools.map((t) => t.spec), submitTool.spec],
    maxTurns,
    open: (task) => {
      const c = generateCase(Number(task.seed), level);
      const inv = new Investigation(c);
      const parts = motive ? "who did it, with which weapon, where, and why" : "who did it, " +
        "with which weapon, and where";
      const prompt = `${c.victim} was found dead at ${c.house} this morning. Find ${parts}. ` +
        "Examine the case with the tools: every clue, witness statement and exhibit is reliable, " +
        `and exactly one answer fits them all. Then call submit_answer once; each part right ` +
        `earns ${motive ? "a quarter" : "a third"} of the reward.`;
      return toolSession(
        [textBlock(prompt)],
        [...tools.map((t) => t.bind(inv)), submitTool.bind(inv)],
      );
    },
  };
}
