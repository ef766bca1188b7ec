import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { findLocalModel } from "../../lib/local/models.ts";
import { checkBaseParameters } from "../../lib/local/model/params.ts";
import { readSafetensors } from "../../lib/local/safetensors.ts";
import { evaluateEnv } from "../../lib/pretrain/evaluate.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../../lib/tokenizers/mod.ts";
import { evaluateToolEnv } from "../../lib/pretrain/evaluate_tools.ts";
import {
  generateUnseenToolTask,
  sameNameAndArgumentNames,
} from "../../lib/pretrain/unseen_tools.ts";
import { ModelInput } from "../../lib/tinker/mod.ts";

const CARD = new URL("../../models/README.md", import.meta.url);

/**
 * A model's check line in the card: `Check: <env>, N episodes, seed S, … success X%, invalid
 * actions Y%, tolerance ±T points` (local/games), or `Check local/games2: …` for another model.
 */
function cardCheck(card: string, model: string) {
  const name = model === "local/games" ? "" : ` ${model.replace("/", "\\/")}`;
  const m = card.replace(/\s+/g, " ").match(
    new RegExp(
      `Check${name}: (\\S+), (\\d+) episodes, seed (\\d+), temperature 1\\.0: success ([\\d.]+)%, ` +
        `invalid actions ([\\d.]+)%, tolerance ±([\\d.]+) points`,
    ),
  );
  if (!m) throw new Error(`models/README.md has no check line for ${model}`);
  return {
    envId: m[1],
    episodes: Number(m[2]),
    seed: Number(m[3]),
    success: Number(m[4]) / 100,
    invalid: Number(m[5]) / 100,
    tolerance: Number(m[6]) / 100,
  };
}

for (const model of ["local/games", "local/games2", "local/hint"]) {
  Deno.test(`model card: the committed ${model} weights reproduce the card's GuessTheNumber-easy numbers`, async () => {
    const weights = new URL(`../../models/${model.replace("/", "_")}.safetensors`, import.meta.url);
    const { tensors, metadata } = await readSafetensors(weights.pathname);
    assert.equal(metadata.format, "tinkerbench-base");
    checkBaseParameters(findLocalModel(model)!.config, tensors);
    const check = cardCheck(await Deno.readTextFile(CARD), model);

    const dataDir = await Deno.makeTempDir({ prefix: "tb-model-card-" });
    const server = await startLocalServer({ dataDir });
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    try {
      const sampler = await service.createSamplingClient({ baseModel: model });
      const r = await evaluateEnv(sampler, check.envId, {
        episodes: check.episodes,
        seed: check.seed,
        temperature: 1,
        renderer: new ChatMLRenderer<Tokenizer>(getTokenizer(model)),
        contextLength: findLocalModel(model)!.config.maxSeqLen,
      });
      const near = (a: number, b: number) => Math.abs(a - b) <= check.tolerance + 1e-9;
      assert.ok(
        near(r.successRate, check.success),
        `success ${r.successRate} vs card ${check.success}`,
      );
      assert.ok(
        near(r.invalidActionRate, check.invalid),
        `invalid actions ${r.invalidActionRate} vs card ${check.invalid}`,
      );
      // Far from a random init, which never closes a move with a valid \boxed{N}<|im_end|>.
      assert.ok(r.successRate > 0.1 && r.invalidActionRate < 0.5, JSON.stringify(r));
    } finally {
      service.close();
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
}

Deno.test("model card: local/tools calls tools it never saw by their names and argument names, and calls the tool games' tools", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-tool-model-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const sampler = await service.createSamplingClient({ baseModel: "local/tools" });
    const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer("local/tools"));
    // Made-up tools from seeds no pretraining transcript used, declared as a rollout declares
    // them; greedy replies. The card (run 24): 64 of 64 such replies parse as a call, 51 name
    // the asked tool with its argument names; 12 of these first 16 do.
    let parsed = 0, asked = 0;
    for (let i = 0; i < 16; i++) {
      const task = generateUnseenToolTask(2_000_000 + i);
      const messages = renderer.declareTools([{ role: "user", content: task.prompt }], task.tools);
      const res = await sampler.sample({
        prompt: ModelInput.fromInts(renderer.buildGenerationPrompt(messages)),
        numSamples: 1,
        samplingParams: {
          maxTokens: 64,
          temperature: 0,
          stop: [...renderer.stopSequences(), ...renderer.tokenizer.encode("</tool_call>")],
        },
      });
      const call = renderer.parseResponse(res.sequences[0].tokens).message.toolCalls?.[0];
      if (call && typeof call.name === "string" && typeof call.arguments === "object") parsed++;
      if (sameNameAndArgumentNames(call, task.calls[0])) asked++;
    }
    assert.ok(parsed >= 14, `${parsed} of 16 greedy replies parse as a tool call`);
    assert.ok(asked >= 10, `${asked} of 16 greedy replies name the asked tool and its arguments`);
    // The tool games it was pretrained on: greedy play is all valid calls.
    const played = await evaluateToolEnv(sampler, "tool:GuessTheNumber-v0-easy", {
      episodes: 4,
      temperature: 0,
      renderer,
    });
    assert.equal(played.validCallRate, 1, JSON.stringify(played));
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
