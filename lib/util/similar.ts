/**
 * Finding what a user meant: the edit distance between two names, and the known names nearest
 * to a mistyped one, for "did you mean" hints.
 *
 * @module
 */

/** Levenshtein distance: insertions, deletions and substitutions that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The candidates nearest to `name` (case-insensitive), best first, when they are close enough
 * to be a typo (about a quarter of the name's length) or start with it.
 *
 * @example
 * closest("game:Hangman-v0-esy", listEnvs()); // ["game:Hangman-v0-easy"]
 */
export function closest(name: string, candidates: readonly string[], max = 3): string[] {
  const key = name.toLowerCase();
  const limit = Math.max(2, Math.floor(key.length / 4));
  return candidates
    .map((c) => {
      const lower = c.toLowerCase();
      return { c, d: lower.startsWith(key) ? 0 : editDistance(key, lower) };
    })
    .filter((x) => x.d <= limit)
    .sort((x, y) => x.d - y.d)
    .slice(0, max)
    .map((x) => x.c);
}
