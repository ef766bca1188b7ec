/**
 * Grade-school word problems, the offline stand-in for GSM8K: two- and three-step problems
 * generated from templates with a seed (shopping, money, travel, sharing, ages, harvests,
 * reading, discounts, savings, classrooms), each with its exact answer, and one `answer` tool
 * checked by a verifier that reads the last number of the answer ("$1,250", "42 apples", "7.5",
 * "3/4"). A right answer earns 1, a wrong one 0; either ends the episode (OpenReward's GSM8K
 * example does the same).
 *
 * @module
 */

import { z } from "zod";
import { Rng } from "../util/random.ts";
import { parseAnswer } from "./arithmetic.ts";
import {
  defineTool,
  seededTasks,
  textBlock,
  textOutput,
  type ToolEnvironment,
  toolSession,
} from "./tool_env.ts";

/** A generated problem. */
export interface WordProblem {
  /** The problem's text. */
  question: string;
  /** Its numeric answer. */
  answer: number;
  /** The template it came from. */
  kind: string;
}

const NAMES = [
  ["Mia", "she"],
  ["Liam", "he"],
  ["Ava", "she"],
  ["Noah", "he"],
  ["Zoe", "she"],
  ["Omar", "he"],
  ["Priya", "she"],
  ["Diego", "he"],
] as const;

type Template = (r: Rng, name: string, pronoun: string) => { question: string; answer: number };

/** Uniform integer in [lo, hi]. */
const between = (r: Rng, lo: number, hi: number) => lo + r.int(hi - lo + 1);
const cap = (s: string) => s[0].toUpperCase() + s.slice(1);

const TEMPLATES: Record<string, Template> = {
  packs: (r, n, p) => {
    const packs = between(r, 2, 9), per = between(r, 3, 12);
    const given = between(r, 1, packs * per - 1);
    const item = ["pencils", "stickers", "marbles", "cookies"][r.int(4)];
    return {
      question: `${n} buys ${packs} packs of ${item} with ${per} ${item} in each pack. ` +
        `${cap(p)} gives ${given} ${item} to a friend. How many ${item} does ${n} have left?`,
      answer: packs * per - given,
    };
  },
  change: (r, n, p) => {
    const count = between(r, 2, 6), price = between(r, 2, 15);
    const money = count * price + between(r, 1, 40);
    const thing = ["notebooks", "sandwiches", "tickets", "plants"][r.int(4)];
    return {
      question: `${n} has $${money}. ${cap(p)} buys ${count} ${thing} at $${price} each. ` +
        `How many dollars does ${n} have left?`,
      answer: money - count * price,
    };
  },
  travel: (r) => {
    const speed = between(r, 20, 80), hours = between(r, 2, 6), extra = between(r, 5, 60);
    const v = ["bus", "train", "truck", "cyclist"][r.int(4)];
    return {
      question: `A ${v} travels at ${speed} km per hour for ${hours} hours, then ${extra} km ` +
        "more. How many kilometres does it travel in total?",
      answer: speed * hours + extra,
    };
  },
  sharing: (r, n) => {
    const friends = between(r, 2, 8), each = between(r, 2, 9), kept = between(r, 1, 10);
    return {
      question: `${n} bakes ${friends * each + kept} muffins, keeps ${kept} and shares the ` +
        `rest equally among ${friends} friends. How many muffins does each friend get?`,
      answer: each,
    };
  },
  ages: (r, n) => {
    const age = between(r, 5, 15), older = between(r, 2, 30), years = between(r, 1, 10);
    const other = NAMES[r.int(NAMES.length)][0];
    const who = other === n ? "Their cousin" : other;
    return {
      question: `${n} is ${age} years old. ${who} is ${older} years older than ${n}. How old ` +
        `will ${who === "Their cousin" ? "their cousin" : who} be in ${years} years?`,
      answer: age + older + years,
    };
  },
  harvest: (r) => {
    const rows = between(r, 3, 9), trees = between(r, 4, 12), apples = between(r, 5, 30);
    const sold = between(r, 1, rows * trees * apples - 1);
    return {
      question: `A farmer has ${rows} rows of ${trees} apple trees. Each tree gives ${apples} ` +
        `apples. The farmer sells ${sold} apples. How many apples are left?`,
      answer: rows * trees * apples - sold,
    };
  },
  reading: (r, n, p) => {
    const perDay = between(r, 5, 30), days = between(r, 2, 9);
    const pages = perDay * days + between(r, 1, 200);
    return {
      question: `A book has ${pages} pages. ${n} reads ${perDay} pages every day. After ` +
        `${days} days, how many pages does ${p} still have to read?`,
      answer: pages - perDay * days,
    };
  },
  discount: (r) => {
    const pct = [10, 20, 25, 50][r.int(4)], price = 20 * between(r, 1, 15);
    const count = between(r, 1, 4);
    return {
      question: `A jacket costs $${price}. It is on sale for ${pct}% off. How many dollars do ` +
        `${count} jackets cost at the sale price?`,
      answer: (count * price * (100 - pct)) / 100,
    };
  },
  savings: (r, n, p) => {
    const weekly = between(r, 3, 20), weeks = between(r, 2, 12);
    const spent = between(r, 1, Math.min(20, weekly * weeks - 1));
    return {
      question: `${n} saves $${weekly} every week for ${weeks} weeks, then spends $${spent} ` +
        `on a gift. How many dollars does ${p} have saved now?`,
      answer: weekly * weeks - spent,
    };
  },
  classroom: (r) => {
    const classes = between(r, 2, 6), students = between(r, 15, 32);
    const absent = between(r, 1, 10), perTable = [2, 4][r.int(2)];
    const present = classes * students - absent;
    const extra = present % perTable;
    return {
      question: `A school has ${classes} classes of ${students} students. ${absent + extra} ` +
        `students are absent today. The rest sit ${perTable} to a table. How many tables are ` +
        "used?",
      answer: (present - extra) / perTable,
    };
  },
};

/** The template names. */
export const WORD_PROBLEM_KINDS: readonly string[] = Object.keys(TEMPLATES);

/**
 * The problem of a seed: the same seed, the same problem.
 *
 * @example
 * const p = generateWordProblem(3);
 * verifyNumericAnswer(String(p.answer), p.answer); // true
 */
export function generateWordProblem(seed: number): WordProblem {
  const r = new Rng(seed);
  const kind = WORD_PROBLEM_KINDS[r.int(WORD_PROBLEM_KINDS.length)];
  const [name, pronoun] = NAMES[r.int(NAMES.length)];
  return { ...TEMPLATES[kind](r, name, pronoun), kind };
}

/**
 * Whether an answer's last number equals the expected value: "$1,250.00", "42 apples",
 * "x = 7.5", "3/4" and `\boxed{12}` are read; an answer without a number is wrong.
 */
export function verifyNumericAnswer(answer: string | number, expected: number): boolean {
  const text = String(answer).replace(/\\boxed\{([^{}]*)\}/g, "$1");
  const numbers = [...text.matchAll(/[+-]?\$?\d[\d,]*(\.\d+)?(\/\d+)?|[+-]?\.\d+/g)];
  const last = numbers.at(-1)?.[0];
  const value = last === undefined ? null : parseAnswer(last);
  return value !== null && Math.abs(value - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
}

class Attempt {
  answered = false;
  constructor(readonly problem: WordProblem) {}
}

const ANSWER_TOOL = defineTool(
  "answer",
  "Give the final answer (one try; it ends the episode).",
  z.object({ answer: z.union([z.string(), z.number()]).describe("The final answer, a number") }),
  (a: Attempt, { answer }) => {
    if (a.answered) return textOutput("Already answered.", { finished: true });
    a.answered = true;
    const ok = verifyNumericAnswer(answer, a.problem.answer);
    return textOutput(ok ? "Correct!" : "Wrong!", {
      reward: ok ? 1 : 0,
      finished: true,
      metadata: { expected: a.problem.answer, kind: a.problem.kind },
    });
  },
);

/** Tasks per split. */
export const WORD_PROBLEM_TASKS = { train: 100_000, test: 1_000 } as const;
const TEST_SALT = 0x65a8;

/**
 * The word problems as a tool environment (`wordproblems-v0`).
 *
 * @example
 * const env = new ToolTaskEnv(localTasks(wordProblems()), { split: "test" });
 */
export function wordProblems(): ToolEnvironment {
  return {
    name: "wordproblems-v0",
    description: "Grade-school word problems with one answer tool (a GSM8K stand-in)",
    ...seededTasks(WORD_PROBLEM_TASKS, TEST_SALT, (seed) => ({
      question: generateWordProblem(seed).question,
    })),
    tools: [ANSWER_TOOL.spec],
    maxTurns: 4,
    open: (task) => {
      const p = generateWordProblem(Number(task.seed));
      const prompt = `${p.question}\n\nWork it out, then give the number with the answer tool.`;
      return toolSession([textBlock(prompt)], [ANSWER_TOOL.bind(new Attempt(p))]);
    },
  };
}
