import { assert } from "../assert.ts";
import { scriptedPolicy, toolCallText } from "../../lib/rollout/scripted.ts";
import { evaluateToolEnv, toolEvaluationTable } from "../../lib/pretrain/evaluate_tools.ts";
import { solveArithmetic } from "../../lib/pretrain/players.ts";

Deno.test("evaluateToolEnv: right calls are valid and solve; text without a call is not valid", async () => {
  const solver = scriptedPolicy((prompt) => {
    const q = prompt.match(/Compute [^.]*\./)![0];
    return toolCallText("answer", { answer: solveArithmetic(q) }) + "<|im_end|>";
  });
  const good = await evaluateToolEnv(solver, "tool:Arithmetic-v0-easy", { episodes: 4 });
  assert.equal(good.successRate, 1);
  assert.equal(good.validCallRate, 1);
  assert.equal(good.meanTurns, 1);
  const chatty = scriptedPolicy(() => "\\boxed{3}<|im_end|>");
  const bad = await evaluateToolEnv(chatty, "tool:Arithmetic-v0-easy", {
    episodes: 2,
    maxTokensPerTurn: 16,
  });
  assert.equal(bad.validCallRate, 0);
  assert.equal(bad.successRate, 0);
  assert.ok(bad.meanTurns > 1); // told to call a tool, it keeps answering in text
  const wrongTool = scriptedPolicy(() => toolCallText("nope", {}) + "<|im_end|>");
  const w = await evaluateToolEnv(wrongTool, "synthetic:UnseenTools-v0", { episodes: 3 });
  assert.equal(w.validCallRate, 0);
  assert.match(
    toolEvaluationTable([good, w]),
    /\| tool:Arithmetic-v0-easy \| 4 \| 100\.0% \| 100\.0% \|/,
  );
});
