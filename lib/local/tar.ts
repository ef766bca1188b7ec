/**
 * A minimal ustar writer: enough to package a checkpoint's files (the archive a Tinker client
 * downloads) in a format every `tar` reads. Regular files only, names up to 100 bytes.
 *
 * @module
 */

const BLOCK = 512;

/** One file of an archive. */
export interface TarEntry {
  name: string;
  data: Uint8Array;
  /** Modification time, seconds since the epoch. */
  mtime?: number;
}

/** Builds a tar archive of regular files. */
export function createTar(entries: TarEntry[]): Uint8Array {
  const size = entries.reduce((n, e) => n + BLOCK + Math.ceil(e.data.length / BLOCK) * BLOCK, 0);
  const out = new Uint8Array(size + 2 * BLOCK); // two zero blocks end the archive
  let pos = 0;
  for (const e of entries) {
    out.set(header(e), pos);
    out.set(e.data, pos + BLOCK);
    pos += BLOCK + Math.ceil(e.data.length / BLOCK) * BLOCK;
  }
  return out;
}

function header(e: TarEntry): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const enc = new TextEncoder();
  const put = (offset: number, length: number, text: string) => {
    const bytes = enc.encode(text);
    if (bytes.length > length) throw new RangeError(`tar: ${text} does not fit in ${length} bytes`);
    h.set(bytes, offset);
  };
  const octal = (n: number, length: number) => n.toString(8).padStart(length - 1, "0");
  put(0, 100, e.name);
  put(100, 8, octal(0o644, 8));
  put(108, 8, octal(0, 8));
  put(116, 8, octal(0, 8));
  put(124, 12, octal(e.data.length, 12));
  put(136, 12, octal(Math.floor(e.mtime ?? Date.now() / 1000), 12));
  put(148, 8, "        "); // checksum field counts as spaces while summing
  put(156, 1, "0");
  put(257, 6, "ustar");
  put(263, 2, "00");
  const sum = h.reduce((a, b) => a + b, 0);
  put(148, 8, `${octal(sum, 7)}\0`);
  return h;
}
