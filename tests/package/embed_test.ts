/** The data files modules read at import are embedded as generated modules equal to them. */

import { assert } from "../assert.ts";
import { EMBEDDED, embeddedModule } from "../../scripts/embed.ts";
import { TINKER_PUBLIC_PROTO } from "../../lib/protocol/tinker_public_proto.ts";
import { ONNX_PROTO } from "../../lib/local/onnx/onnx_proto.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("embed: each generated module is what `deno task embed` writes from its file", async () => {
  for (const e of EMBEDDED) {
    const text = await Deno.readTextFile(new URL(e.source, ROOT));
    assert.equal(
      await Deno.readTextFile(new URL(e.module, ROOT)),
      embeddedModule(e, text),
      `${e.module} differs from ${e.source}: run deno task embed`,
    );
  }
  assert.equal(TINKER_PUBLIC_PROTO, await Deno.readTextFile(new URL(EMBEDDED[0].source, ROOT)));
  assert.equal(ONNX_PROTO, await Deno.readTextFile(new URL(EMBEDDED[1].source, ROOT)));
});

Deno.test("embed: a backtick, a backslash or ${ in a file survives the template literal", async () => {
  const text = "a `quoted` \\ path ${not} a substitution\n";
  const e = { source: "x/y.proto", module: "x/y_proto.ts", name: "Y" };
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/y_proto.ts`, embeddedModule(e, text));
    const mod = await import(`file://${dir}/y_proto.ts`);
    assert.equal(mod.Y, text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
