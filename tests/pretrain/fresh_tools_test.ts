import { assert } from "../assert.ts";
import { FRESH_TOOLS_ID, generateFreshToolTask } from "../../lib/pretrain/fresh_tools.ts";
import { generateUnseenToolTask } from "../../lib/pretrain/unseen_tools.ts";
import { playToolTranscript } from "../../lib/pretrain/tool_transcripts.ts";
import { transcriptExample } from "../../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../../lib/tokenizers/mod.ts";
import { Rng } from "../../lib/util/random.ts";

Deno.test("fresh tools: names are made up per task, several tools are declared, and the asked one varies", () => {
  assert.deepEqual(generateFreshToolTask(9), generateFreshToolTask(9));
  const names = new Set<string>(), unseenNames = new Set<string>();
  let several = 0, notFirst = 0, declared = 0;
  for (let seed = 0; seed < 300; seed++) {
    const task = generateFreshToolTask(seed);
    for (const t of task.tools) names.add(t.name);
    declared += task.tools.length;
    for (const t of generateUnseenToolTask(seed).tools) unseenNames.add(t.name);
    if (task.tools.length > 1) several++;
    if (task.calls[0].name !== task.tools[0].name) notFirst++;
    for (const c of task.calls) assert.ok(task.tools.some((t) => t.name === c.name));
  }
  // Most names are new, where the unseen tools repeat more.
  assert.ok(names.size > 0.75 * declared, `${names.size} distinct fresh names of ${declared}`);
  assert.ok(unseenNames.size < names.size, `${unseenNames.size} distinct unseen names`);
  assert.ok(several > 200 && notFirst > 100, `${several} with several tools, ${notFirst}`);
});

Deno.test("fresh tools: the asked name is the same tokens in its declaration and in the trained call", async () => {
  const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer("local/tools"));
  for (let seed = 0; seed < 20; seed++) {
    const t = await playToolTranscript(FRESH_TOOLS_ID, seed, new Rng(seed + 1), { renderer });
    const call = t.messages.find((m) => m.role === "assistant")!.toolCalls![0];
    const ex = transcriptExample(t, renderer);
    const name = renderer.tokenizer.encode(`name": "${call.name}",`);
    const at = (from: number) => {
      for (let i = from; i + name.length <= ex.tokens.length; i++) {
        if (name.every((x, j) => ex.tokens[i + j] === x)) return i;
      }
      return -1;
    };
    const declared = at(0), called = at(declared + 1);
    assert.ok(declared >= 0 && called > declared, `${call.name}: ${declared}, ${called}`);
    // The declaration is context, the call is trained.
    assert.equal(ex.weights[declared + name.length - 2], 0);
    assert.equal(ex.weights[called + name.length - 2], 1);
  }
});
