/**
 * Opening the judge and the teacher an evidence plan needs: a Tinker sampler of the teacher
 * model (which doubles as judge, as in OpenClaw), or an OpenAI-compatible judge by URL. The
 * trainer and the proxy open them the same way.
 *
 * @module
 */

import type { Renderer } from "../renderers/types.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import type { EvidencePlan, EvidenceSources } from "./evidence.ts";
import {
  type ChatSampler,
  type JudgeSampling,
  OpenAIChatSampler,
  TinkerChatSampler,
} from "./judges.ts";

/** Where the judge and the teacher come from. */
export interface SourceSettings {
  /** The teacher (OPD, KL reference) and, without a judge URL, the judge. */
  teacherModel: string;
  /** An OpenAI-compatible judge (`…/v1`); null: the teacher model on Tinker judges. */
  judgeBaseUrl: string | null;
  /** The model name to ask the OpenAI-compatible judge for (default: the teacher model). */
  judgeModel: string | null;
  /** The judge endpoint's key (`JUDGE_API_KEY`). */
  judgeApiKey?: string;
  /** How the judge samples. */
  judgeSampling: JudgeSampling;
}

/**
 * The samplers an evidence plan needs, and no others.
 *
 * @example
 * const sources = await openEvidenceSources(evidencePlan(settings), {
 *   teacherModel: "local/games", judgeBaseUrl: null, judgeModel: null,
 *   judgeSampling: { m: 3, temperature: 0.6, maxTokens: 256 },
 * }, tinker.service, renderer);
 */
export async function openEvidenceSources(
  plan: EvidencePlan,
  s: SourceSettings,
  service: ServiceClient,
  renderer: Renderer,
): Promise<EvidenceSources> {
  const needsJudge = plan.prm || plan.hint === "judge";
  const needsTeacher = plan.teacher || plan.reference;
  const teacher = needsTeacher || (needsJudge && !s.judgeBaseUrl)
    ? await service.createSamplingClient({ baseModel: s.teacherModel })
    : undefined;
  let judge: ChatSampler | undefined;
  if (needsJudge) {
    judge = s.judgeBaseUrl
      ? new OpenAIChatSampler({
        baseUrl: s.judgeBaseUrl,
        model: s.judgeModel ?? s.teacherModel,
        apiKey: s.judgeApiKey,
      })
      : new TinkerChatSampler(teacher!, renderer, s.teacherModel);
  }
  return {
    judge,
    judgeSampling: s.judgeSampling,
    teacher: teacher ? { sampler: teacher, renderer } : undefined,
  };
}
