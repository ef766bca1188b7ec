import { assert } from "../assert.ts";
import { EnvModuleError, importEnvModule } from "../../lib/envs/modules.ts";
import { asMessageEnv } from "../../lib/envs/message_env.ts";
import { listEnvs, make } from "../../lib/envs/registry.ts";

Deno.test("env modules: the README's example registers its environment; it plays through asMessageEnv", async () => {
  await importEnvModule("examples/my_env.ts");
  assert.ok(listEnvs().includes("my:Echo-v0"));
  const env = asMessageEnv(make("my:Echo-v0"));
  assert.equal(env.tools?.[0].name, "say");
  await env.reset(0);
  const r = await env.step({
    role: "assistant",
    content: "",
    toolCalls: [{ name: "say", arguments: { word: "hi" } }],
  });
  assert.deepEqual([r.reward, r.terminated, r.messages[0].role], [1, true, "tool"]);
});

Deno.test("env modules: a module that cannot be imported is one line naming it", async () => {
  await assert.rejects(
    importEnvModule("examples/no_such_env.ts"),
    (e: Error) =>
      e instanceof EnvModuleError && !e.message.includes("\n") &&
      /^env_module examples\/no_such_env\.ts: could not import it/.test(e.message),
  );
});
