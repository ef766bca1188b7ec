import { assert } from "../assert.ts";
import { type EnvEvaluation, evaluationTable } from "../../lib/pretrain/evaluate.ts";

Deno.test("evaluationTable: one row per environment, GuessTheNumber's consistency by turn", () => {
  const base = {
    episodes: 10,
    successRate: 0.5,
    invalidActionRate: 0.125,
    formatErrorRate: 0,
    meanReward: 0.75,
    meanTurns: 3.2,
    contextFullRate: 0,
  };
  const rows: EnvEvaluation[] = [
    {
      ...base,
      envId: "game:GuessTheNumber-v0-easy",
      consistentGuessRate: 0.8,
      consistentByTurn: [1, 0.85, 0.5],
    },
    { ...base, envId: "game:Mastermind-v0-easy" },
  ];
  const lines = evaluationTable(rows).split("\n");
  assert.equal(lines.length, 4);
  assert.equal(lines[0].split("|").length, lines[1].split("|").length);
  assert.match(lines[2], /\| 80\.0% \| 100 \/ 85 \/ 50 \|$/);
  assert.match(lines[3], /\| – \| – \|$/);
});
