/**
 * A user environment in a dozen lines: a message-level environment with one tool, registered
 * under its own id. Train on it with
 * `deno task train --env-module examples/my_env.ts --env-id my:Echo-v0 --max-steps 3`.
 * It needs a model that calls tools (a Qwen3 model on the Tinker cloud): no local model does yet,
 * so on the embedded backend the run stops after 5 steps that trained nothing, saying why.
 */

import { type Message, type MessageEnv, register } from "../mod.ts";

class Echo implements MessageEnv {
  readonly kind = "message";
  readonly id = "my:Echo-v0";
  readonly maxTurns = 1;
  readonly tools = [{
    name: "say",
    description: "Say a word out loud.",
    parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  }];
  reset() {
    return {
      messages: [{ role: "user" as const, content: "Say 'hi' with the say tool." }],
      info: {},
    };
  }
  step(reply: Message) {
    const word = (reply.toolCalls?.[0]?.arguments as { word?: string } | undefined)?.word;
    const tool: Message = { role: "tool", content: word ?? "(nothing said)" };
    return {
      messages: [tool],
      reward: word === "hi" ? 1 : 0,
      terminated: true,
      truncated: false,
      info: {},
    };
  }
  spawn() {
    return new Echo();
  }
}

register("my:Echo-v0", () => new Echo());
