/**
 * Tower of Hanoi with GEM's rules: move all disks from tower A to tower C, one at a time, never a
 * larger disk on a smaller one. The action is the last `\boxed{X Y}` (or `\boxed{X,Y}`), moving
 * the top disk of X onto Y.
 *
 * Rewards: solving 1.0 (ends); illegal moves (empty source, larger on smaller) and ordinary moves
 * 0; an unparseable action ends the game with −0.1; at the turn limit the reward is the fraction
 * of disks already on C (GEM's partial credit).
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { lastBoxed, type Move, pick, REWARD, TurnGame } from "./game.ts";

/** Disk count and turn limit. */
export interface HanoiOptions {
  /** Disks on the first peg. */
  disks: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants (`game:TowerofHanoi-v0-*`). */
export const HANOI_VARIANTS = {
  easy: { disks: 3, maxTurns: 10 },
  hard: { disks: 5, maxTurns: 35 },
} as const satisfies Record<string, HanoiOptions>;

/** The settings `-random` picks from at each reset, as in GEM. */
export const HANOI_RANDOM: readonly HanoiOptions[] = [
  { disks: 3, maxTurns: 10 },
  { disks: 4, maxTurns: 20 },
  { disks: 5, maxTurns: 35 },
];

/** A peg's name. */
export type Tower = "A" | "B" | "C";
/** The game's state between moves. */
export interface TowerOfHanoiState {
  /** How many disks. */
  disks: number;
  /** Each peg's disks, bottom first. */
  towers: Record<Tower, number[]>;
}

/** The Tower of Hanoi environment. */
export class TowerOfHanoi extends TurnGame<TowerOfHanoiState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard" | "random";

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    super(variant === "random" ? HANOI_RANDOM[0].maxTurns : HANOI_VARIANTS[variant].maxTurns);
    this.#variant = variant;
    this.id = `game:TowerofHanoi-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): TowerOfHanoiState {
    const opts = this.#variant === "random"
      ? pick(rng, HANOI_RANDOM)
      : HANOI_VARIANTS[this.#variant];
    this.maxTurns = opts.maxTurns;
    const a = Array.from({ length: opts.disks }, (_, i) => opts.disks - i);
    return { disks: opts.disks, towers: { A: a, B: [], C: [] } };
  }

  /** Towers bottom to top, e.g. `A: [3, 2, 1]`. */
  render(): string {
    const t = this.state!.towers;
    return (["A", "B", "C"] as const).map((k) => `${k}: [${t[k].join(", ")}]`).join("\n");
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    return `You are playing Tower of Hanoi with ${this.state!.disks} disks (1 is the smallest). ` +
      `Move every disk from tower A to tower C, one at a time, never placing a larger disk on a ` +
      `smaller one. You have ${this.maxTurns} turns. Move the top disk of one tower onto another ` +
      `with \\boxed{A C} (from A to C).\n${this.render()}`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const s = this.state!;
    const m = lastBoxed(action)?.match(/^([ABC])\s*,?\s*([ABC])$/i);
    if (!m) return this.formatError("two towers in \\boxed{}, e.g. \\boxed{A C}");
    const src = m[1].toUpperCase() as Tower, dst = m[2].toUpperCase() as Tower;
    const from = s.towers[src], to = s.towers[dst];
    let observation: string, reason: string;
    if (from.length === 0) {
      [observation, reason] = [`Tower ${src} is empty.`, "empty_source"];
    } else if (to.length > 0 && from.at(-1)! > to.at(-1)!) {
      [observation, reason] = [
        `The top disk of ${src} is larger than the top disk of ${dst}.`,
        "larger_on_smaller",
      ];
    } else if (src === dst) {
      [observation, reason] = [`A disk cannot move from ${src} to itself.`, "same_tower"];
    } else {
      const disk = from.pop()!;
      to.push(disk);
      if (s.towers.C.length === s.disks) {
        return {
          observation: "Solved! All disks are on tower C.",
          reward: REWARD.success,
          reason: "solved",
          end: true,
        };
      }
      return {
        observation:
          `Turn ${this.turn}: moved disk ${disk} from ${src} to ${dst}.\n${this.render()}`,
        reward: REWARD.step,
        reason: "moved",
      };
    }
    return {
      observation: `Turn ${this.turn}: ${observation}\n${this.render()}`,
      reward: REWARD.invalid,
      reason,
    };
  }

  /** Partial credit at the turn limit (GEM's). */
  protected override timeoutReward(): number {
    return this.state!.towers.C.length / this.state!.disks;
  }

  /** An unreset game of the same variant. */
  protected fresh(): TowerOfHanoi {
    return new TowerOfHanoi(this.#variant);
  }
}
