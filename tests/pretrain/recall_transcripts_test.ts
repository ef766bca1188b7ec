import { assert } from "../assert.ts";
import {
  declaredTools,
  isRecallEnvId,
  playRecallTranscript,
  RECALL_ID,
  RECALL_IDS,
  RECALL_LETTERS_ID,
  RECALL_NAMES_ID,
  RECALL_RECORDS_ID,
  RECALL_SPELLED_ID,
  RECALL_TOOLS_ID,
  recallWords,
} from "../../lib/pretrain/recall_transcripts.ts";
import {
  TOOLS_PRETRAIN_MIX,
  TOOLS_TOKENIZER_MIX,
  transcriptExample,
  TranscriptStream,
} from "../../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../../lib/tokenizers/mod.ts";
import { Rng } from "../../lib/util/random.ts";

const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer("local/tools"));

Deno.test("recall: the reply is the user's words again, in order, each one token", () => {
  const shapes = { same: 0, toJson: 0 };
  for (let seed = 0; seed < 150; seed++) {
    const t = playRecallTranscript(RECALL_ID, seed, new Rng(seed), { renderer });
    const [user, reply] = t.messages;
    assert.equal(reply.role, "assistant");
    const list = user.content.slice(user.content.indexOf("\n") + 1);
    const words = list.startsWith("[") ? JSON.parse(list) : list.split(" ");
    assert.ok(words.length >= 6 && new Set(words).size === words.length);
    if (reply.content === list) shapes.same++;
    else {
      shapes.toJson++;
      assert.deepEqual(JSON.parse(reply.content), words);
    }
    // Each word is one token in the prompt and one in the trained reply, so the token to copy
    // is the one after the current token's earlier occurrence.
    const ex = transcriptExample(t, renderer);
    const trained = ex.tokens.filter((_, i) => ex.weights[i] > 0);
    const word = (w: string) =>
      renderer.tokenizer.encode(reply.content.startsWith("[") ? w : ` ${w}`);
    for (const w of words.slice(1)) {
      assert.equal(word(w).length, 1);
      assert.ok(trained.includes(word(w)[0]), w);
    }
  }
  assert.ok(shapes.same > 70 && shapes.toJson > 30, JSON.stringify(shapes));
});

Deno.test("recall names: distinct names whose pieces recur, so a copy matches two tokens back", () => {
  let ambiguous = 0;
  for (let seed = 0; seed < 100; seed++) {
    const t = playRecallTranscript(RECALL_NAMES_ID, seed, new Rng(seed), { renderer });
    const [user, reply] = t.messages;
    const list = user.content.slice(user.content.indexOf("\n") + 1);
    const names: string[] = list.startsWith("[") ? JSON.parse(list) : list.split(" ");
    assert.ok(names.length >= 2 && new Set(names).size === names.length, list);
    assert.deepEqual(
      reply.content.startsWith("[") ? JSON.parse(reply.content) : reply.content.split(" "),
      names,
    );
    for (const n of names) {
      const pieces = n.split("_");
      assert.ok(pieces.length <= 3 && new Set(pieces).size === pieces.length, n);
    }
    // A piece after `_` that differs between two names with the same `_`: one token back is not
    // enough to tell which to copy.
    const after = names.flatMap((n) => n.split("_").slice(1));
    if (new Set(after).size > 1) ambiguous++;
  }
  assert.ok(ambiguous > 80, `${ambiguous} of 100 lists need a two-token match`);
});

Deno.test("recall tools: each answer is read from the declarations the system message holds", () => {
  let listed = 0;
  for (let seed = 0; seed < 60; seed++) {
    const t = playRecallTranscript(RECALL_TOOLS_ID, seed, new Rng(seed), { renderer });
    // The transcript's first draws are its tools'.
    const { tools } = declaredTools(recallWords(renderer.tokenizer), new Rng(seed));
    for (const name of tools.map((x) => x.name)) {
      assert.ok(name.split("_").every((w) => renderer.tokenizer.encode(w).length === 1), name);
    }
    const [system, ...turns] = t.messages;
    assert.equal(system.role, "system");
    for (const tool of tools) assert.ok(system.content.includes(`"name": "${tool.name}"`));
    const asked = new Set<string>();
    for (let i = 0; i < turns.length; i += 2) {
      const [q, a] = [turns[i].content, JSON.parse(turns[i + 1].content) as string[]];
      if (!q.includes("argument")) {
        listed++;
        assert.deepEqual(a, tools.map((x) => x.name), q);
        continue;
      }
      const named = q.match(/(?:does|of|the) (\w+)(?: take\?| tool\?|\.)$/)![1];
      const tool = tools.find((x) => x.name === named)!;
      assert.ok(tool, q);
      assert.ok(!asked.has(tool.name), "each tool is asked about once");
      asked.add(tool.name);
      const props = (tool.parameters as { properties: Record<string, unknown> }).properties;
      assert.deepEqual(a, Object.keys(props), q);
    }
    assert.ok(asked.size >= 1);
  }
  assert.ok(listed > 15 && listed < 45, `${listed} of 60 list the tools`);
});

Deno.test("recall records: each answer is the records' values, read by key, never asked twice", () => {
  const kinds = { list: 0, lookup: 0 };
  for (let seed = 0; seed < 80; seed++) {
    const t = playRecallTranscript(RECALL_RECORDS_ID, seed, new Rng(seed), { renderer });
    const lines = t.messages[0].content.split("\n");
    const records = lines.slice(0, -1).map((l) => JSON.parse(l) as Record<string, string>);
    assert.ok(records.length >= 3);
    const values = records.flatMap((r) => Object.values(r));
    assert.equal(new Set(values).size, values.length, "values are distinct");
    const questions = [
      lines.at(-1)!,
      ...t.messages.slice(2).filter((m) => m.role === "user").map((m) => m.content),
    ];
    assert.equal(new Set(questions).size, questions.length);
    const answers = t.messages.filter((m) => m.role === "assistant").map((m) =>
      JSON.parse(m.content)
    );
    questions.forEach((q, i) => {
      const list = q.match(/^List every (\w+)\.$/);
      if (list) {
        kinds.list++;
        assert.deepEqual(answers[i], records.map((r) => r[list[1]]));
        return;
      }
      const [, key, by, v] = q.match(/^What is the (\w+) of the record whose (\w+) is (\w+)\?$/)!;
      kinds.lookup++;
      assert.deepEqual(answers[i], [records.find((r) => r[by] === v)![key]]);
    });
  }
  assert.ok(kinds.list > 40 && kinds.lookup > 40, JSON.stringify(kinds));
});

Deno.test("recall spelled: names and tools with made-up letter pieces, copied exactly", () => {
  const kinds = { names: 0, tools: 0 };
  let spelledPieces = 0, wordPieces = 0;
  const count = (name: string) => {
    for (const p of name.split("_")) {
      if (renderer.tokenizer.encode(p).length > 1) spelledPieces++;
      else wordPieces++;
    }
  };
  for (let seed = 0; seed < 120; seed++) {
    // Every transcript fits local/tools' context, or playRecallTranscript throws.
    const t = playRecallTranscript(RECALL_SPELLED_ID, seed, new Rng(seed), { renderer });
    if (t.messages[0].role === "system") {
      kinds.tools++;
      const answers = t.messages.filter((m) => m.role === "assistant");
      for (const a of answers) (JSON.parse(a.content) as string[]).forEach(count);
      // Each answer is in the declarations, letter for letter.
      for (const a of answers) {
        for (const n of JSON.parse(a.content)) assert.ok(t.messages[0].content.includes(`"${n}"`));
      }
      continue;
    }
    kinds.names++;
    const [user, reply] = t.messages;
    const list = user.content.slice(user.content.indexOf("\n") + 1);
    const names: string[] = list.startsWith("[") ? JSON.parse(list) : list.split(" ");
    names.forEach(count);
    assert.deepEqual(
      reply.content.startsWith("[") ? JSON.parse(reply.content) : reply.content.split(" "),
      names,
    );
  }
  assert.ok(kinds.names > 40 && kinds.tools > 40, JSON.stringify(kinds));
  const share = spelledPieces / (spelledPieces + wordPieces);
  assert.ok(share > 0.3 && share < 0.7, `${share} of the pieces are spelled in letters`);
  // recall:tools draws as before: its tools are declaredTools' without letter pieces.
  const t = playRecallTranscript(RECALL_TOOLS_ID, 5, new Rng(5), { renderer });
  const { tools } = declaredTools(recallWords(renderer.tokenizer), new Rng(5));
  for (const tool of tools) assert.ok(t.messages[0].content.includes(`"name": "${tool.name}"`));
});

Deno.test("recall letters: made-up words spelled in letters, distinct, said back in order", () => {
  for (let seed = 0; seed < 60; seed++) {
    const t = playRecallTranscript(RECALL_LETTERS_ID, seed, new Rng(seed), { renderer });
    const [user, reply] = t.messages;
    const list = user.content.slice(user.content.indexOf("\n") + 1);
    const words: string[] = list.startsWith("[") ? JSON.parse(list) : list.split(" ");
    assert.ok(words.length >= 3 && words.length <= 12 && new Set(words).size === words.length);
    for (const w of words) assert.ok(/^[a-z]{2,7}$/.test(w), w);
    assert.ok(words.some((w) => renderer.tokenizer.encode(w).length > 1), list);
    assert.deepEqual(
      reply.content.startsWith("[") ? JSON.parse(reply.content) : reply.content.split(" "),
      words,
    );
  }
});

Deno.test("recall: a pretraining mix entry of local/tools, not of its tokenizer's mix", async () => {
  for (const id of RECALL_IDS) {
    assert.ok(isRecallEnvId(id) && TOOLS_PRETRAIN_MIX.some((e) => e.envId === id));
    // Made-up names must not become tokens.
    assert.ok(!TOOLS_TOKENIZER_MIX.some((e) => e.envId === id));
  }
  assert.ok(!isRecallEnvId("synthetic:FreshTools-v0"));
  const [t] = await new TranscriptStream(3, [{ envId: RECALL_ID, weight: 1 }], { renderer }).next(
    1,
  );
  assert.equal(t.envId, RECALL_ID);
  assert.throws(() => playRecallTranscript("recall:other", 0, new Rng(0)), /recall transcripts/);
});
