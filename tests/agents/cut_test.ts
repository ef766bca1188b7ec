/**
 * The opted-in cut (`proxy.truncate_keep_head`) through a whole training run: an agent-sized
 * prompt on a 1,024-position model (`local/games2`), sent with the official `openai` client as
 * the CLI tests' flow sends them (./clis.ts: history binding, a reward on every request), is cut
 * to fit, trained on as cut, and the cut is recorded on the turn and in the step's metrics.
 * The CLI tests themselves serve `local/long`, which holds their whole prompts.
 */

import OpenAI from "openai";
import { assert } from "../assert.ts";
import { endAgentRun, readAgentRun, REWARD_HEADER, withAgentRun } from "./clis.ts";

Deno.test({
  name:
    "agents: an agent-sized prompt on a small model is cut when opted in, trained as cut, and the cut is recorded",
  sanitizeResources: false,
  async fn() {
    await withAgentRun("cut", async (run) => {
      const url = await run.url;
      assert.ok(url, "the proxy listens");
      const client = new OpenAI({
        baseURL: url,
        apiKey: "none",
        maxRetries: 0,
        defaultHeaders: { [REWARD_HEADER.name]: REWARD_HEADER.value, "X-Session-Id": "cut" },
      });
      // About 3,000 tokens of instructions: three times local/games2's context.
      const system = "You are a coding agent. Read the files before you edit them. ".repeat(50);
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: "system", content: system },
        { role: "user", content: "Say hello in one word." },
      ];
      const first = await client.chat.completions.create({
        model: "local/games2",
        messages,
        max_tokens: 16,
      }).withResponse();
      const cut = Number(first.response.headers.get("x-prompt-truncated-tokens"));
      assert.ok(cut > 0, "the answer says the prompt was cut");
      const answer = first.data.choices[0].message;
      await client.chat.completions.create({
        model: "local/games2",
        messages: [...messages, { role: "assistant", content: answer.content ?? "" }, {
          role: "user",
          content: "Now say bye.",
        }],
        max_tokens: 16,
      });
      await endAgentRun(run);
      const out = await run.output;
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stderr + out.stdout, /proxy: prompts over the context are cut/);
      const { turns, metrics } = await readAgentRun(run.dir);
      const t0 = turns.find((t) => t.turn_type === "main" && t.turn_index === 0)!;
      assert.equal(t0.status, "trained", JSON.stringify(t0));
      assert.equal(t0.truncated_tokens, cut, "the cut is recorded on the turn");
      assert.ok(t0.prompt_tokens < 1024, "the turn trained on the cut prompt");
      const row = metrics.find((m) => m["train/datums"] > 0)!;
      assert.ok(row["proxy/truncated_turns"] >= 1);
      assert.ok(row["proxy/truncated_tokens"] >= cut, "and in the step's metrics");
    }, { model: "local/games2", truncateKeepHead: 256 });
  },
});
