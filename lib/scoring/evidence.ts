/**
 * Evidence gathering: every network call a method's scoring needs, and nothing else. Per turn:
 * PRM votes on the turn's next state, OPD's hindsight hint (from the hint judge, or the next
 * state itself), the teacher's log-probs of the action with the hint in the prompt, and the
 * reference policy's log-probs for a KL penalty. What to gather comes from the method
 * ({@link evidencePlan} in `./compose.ts`); what it means is composed afterwards, purely.
 *
 * One error policy: a failed call is recorded on its turn (`TurnEvidence.errors`, and the turn is
 * then not trained on what it lacks); only when a source fails on every turn it was asked about
 * is it one error ({@link JudgeError}) naming the judge or teacher and the first cause, since a
 * run that silently trains on nothing is worse than one that stops.
 *
 * @module
 */

import type { Message, Renderer } from "../renderers/types.ts";
import { actionText, nextStateText } from "../rl/text.ts";
import type { Episode, EpisodeGroup, Turn, TurnEvidence } from "../rl/types.ts";
import { ModelInput, type SamplingClient } from "../tinker/mod.ts";
import {
  type ChatSampler,
  extractHint,
  type JudgeSampling,
  judgeTurn,
  teacherLogprobs,
} from "./judges.ts";
import type { JudgedTurn } from "./prompts.ts";

/** Which evidence to gather for every turn. */
export interface EvidencePlan {
  /** PRM votes on the next state (as rewards, or for monitoring). */
  prm: boolean;
  /** Where OPD's hint comes from; null: no hint. */
  hint: "judge" | "next_state" | null;
  /** The teacher's log-probs of the action with the hint (needs `hint`). */
  teacher: boolean;
  /** The reference policy's log-probs of the action on its own prompt (KL penalty). */
  reference: boolean;
}

/** Who answers the calls. */
export interface EvidenceSources {
  /** The PRM and hint judge. */
  judge?: ChatSampler;
  /** How the judge samples. */
  judgeSampling: JudgeSampling;
  /** The teacher (OPD), also the KL reference: a sampler of the teacher model and its renderer. */
  teacher?: { sampler: SamplingClient; renderer: Renderer };
}

/** Options of {@link gatherEvidence}. */
export interface GatherOptions {
  /**
   * The messages a turn's action answered, for the teacher's prompt (default
   * {@link conversationBefore}: earlier observations and actions, then the turn's observation).
   * The proxy passes each request's own messages: an agent need not replay every message.
   */
  conversation?: (episode: Episode, turn: number) => Message[];
}

/** Evidence attached to each turn (keyed by the turn record itself, which travels unchanged). */
export type EvidenceByTurn = Map<Turn, TurnEvidence>;

/**
 * A judge or teacher that failed on every turn of a batch (unreachable, or a prompt longer than
 * its context). Failures on some turns stay on those turns.
 */
export class JudgeError extends Error {
  /** The error's name, for logs. */
  override name = "JudgeError";
}

/** Hints shorter than this are not hints (OpenClaw's `len(hint) > 10`). */
const MIN_HINT_CHARS = 10;

/**
 * Gathers the planned evidence for every turn of the groups, all calls concurrent.
 *
 * @example
 * const evidence = await gatherEvidence(groups, evidencePlan(settings), { teacher, judgeSampling });
 * const batch = composeAdvantages(groups, evidence, settings);
 */
export async function gatherEvidence(
  groups: EpisodeGroup[],
  plan: EvidencePlan,
  sources: EvidenceSources,
  options: GatherOptions = {},
): Promise<EvidenceByTurn> {
  const conversation = options.conversation ?? conversationBefore;
  const needsJudge = plan.prm || plan.hint === "judge";
  if (needsJudge && !sources.judge) throw new Error("evidence: this plan needs a judge");
  if ((plan.teacher || plan.reference) && !sources.teacher) {
    throw new Error(`evidence: ${plan.teacher ? "OPD" : "the KL penalty"} needs a teacher`);
  }
  const evidence: EvidenceByTurn = new Map();
  const asked = new Map<string, number>();
  const failed = new Map<string, { count: number; first: string }>();
  const attempt = async <T>(ev: TurnEvidence, source: string, call: () => Promise<T>) => {
    asked.set(source, (asked.get(source) ?? 0) + 1);
    try {
      return await call();
    } catch (e) {
      const message = (e as Error).message;
      ev.errors.push(`${source}: ${message}`);
      const f = failed.get(source) ?? { count: 0, first: message };
      failed.set(source, { ...f, count: f.count + 1 });
      return undefined;
    }
  };
  const judgeName = `the PRM judge (${sources.judge?.name})`;
  const hintName = `the hint judge (${sources.judge?.name})`;
  const teacherName = `the teacher (${sources.teacher?.sampler.baseModel})`;

  const jobs: Promise<void>[] = [];
  let index = 0;
  for (const group of groups) {
    for (const episode of group.episodes) {
      episode.turns.forEach((turn, t) => {
        const ev: TurnEvidence = { errors: [] };
        evidence.set(turn, ev);
        const i = index++;
        const judged = judgedTurn(turn);
        jobs.push((async () => {
          const calls: Promise<unknown>[] = [];
          if (plan.prm && judged) {
            calls.push(attempt(ev, judgeName, async () => {
              const j = await judgeTurn(
                sources.judge!,
                judged,
                seeded(sources.judgeSampling, 2 * i),
              );
              ev.prm = { score: j.score, votes: j.votes, representative: j.representative };
            }));
          }
          if (plan.reference) {
            calls.push(attempt(ev, teacherName, async () => {
              ev.referenceLogprobs = await referenceLogprobs(sources.teacher!.sampler, turn);
            }));
          }
          if (plan.hint) {
            calls.push((async () => {
              if (plan.hint === "judge") {
                if (!judged) return void (ev.hint = null);
                await attempt(ev, hintName, async () => {
                  const h = await extractHint(
                    sources.judge!,
                    judged,
                    seeded(sources.judgeSampling, 2 * i + 1),
                  );
                  ev.hint = h.hint;
                  ev.hintDecisions = h.decisions;
                });
              } else {
                const text = judged?.nextState.trim() ?? "";
                ev.hint = text.length > MIN_HINT_CHARS ? text : null;
              }
              if (!plan.teacher || !ev.hint) return;
              const hint = ev.hint;
              await attempt(ev, teacherName, async () => {
                ev.teacherLogprobs = await teacherLogprobs(
                  sources.teacher!.sampler,
                  sources.teacher!.renderer,
                  conversation(episode, t),
                  hint,
                  turn.actionTokens,
                );
              });
            })());
          }
          await Promise.all(calls);
        })());
      });
    }
  }
  await Promise.all(jobs);
  for (const [source, f] of failed) {
    if (f.count === asked.get(source)) {
      throw new JudgeError(`${source} failed on every turn: ${f.first}`);
    }
  }
  return evidence;
}

/** What the judges see of a turn: its response and its next state; null without a next state. */
export function judgedTurn(turn: Turn): JudgedTurn | null {
  if (turn.nextState.length === 0) return null;
  return {
    response: actionText(turn),
    nextState: nextStateText(turn),
    nextStateRole: turn.nextState[0].role === "tool" ? "tool" : "user",
  };
}

/** The conversation a turn's action answered: earlier observations and actions, then its own. */
export function conversationBefore(episode: Episode, turn: number): Message[] {
  return episode.turns.slice(0, turn + 1).flatMap((t, i) =>
    i < turn ? [...t.observation, t.action] : t.observation
  );
}

async function referenceLogprobs(reference: SamplingClient, turn: Turn): Promise<number[]> {
  const lps = await reference.computeLogprobs(
    ModelInput.fromInts([...turn.observationTokens, ...turn.actionTokens]),
  );
  const out = lps.slice(turn.observationTokens.length);
  if (out.length !== turn.actionTokens.length || out.some((x) => x === null || !isFinite(x))) {
    throw new Error(`expected ${turn.actionTokens.length} finite reference log-probs`);
  }
  return out as number[];
}

function seeded(s: JudgeSampling, offset: number): JudgeSampling {
  return s.seed === undefined ? s : { ...s, seed: s.seed + 1000 * offset };
}
