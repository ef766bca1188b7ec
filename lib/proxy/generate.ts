/**
 * One request's sampling, token-in/token-out: the policy's renderer builds the prompt (tools
 * declared in the system message as Qwen3's template does), the prompt is checked against the
 * context, the sampler draws `n` continuations with the request's settings, and the renderer
 * parses them. The sampled tokens and their log-probs are kept as they came: they are what a
 * main turn trains on.
 *
 * @module
 */

import type { SampleResponse } from "../protocol/mod.ts";
import type { InputChunk, Message, Renderer } from "../renderers/types.ts";
import { stopTexts } from "../renderers/parse.ts";
import type { Sampler } from "../rollout/mod.ts";
import { RequestFailedError } from "../tinker/mod.ts";
import { TinkerAPIError } from "../tinker/http.ts";
import { parseChoice, type SampledChoice } from "./completion.ts";
import { ProxyError } from "./errors.ts";
import type { ParsedRequest } from "./request.ts";
import { bridgePrompt, type MessageSpan, type PreviousTurn } from "./bridge.ts";

/** A request rendered for the policy. */
export interface RenderedPrompt {
  /** The request's messages with the tools declared in the system message. */
  messages: Message[];
  /** The prompt's text tokens (all of it, when it has no images). */
  tokens: number[];
  /** What the sampler is sent: the tokens, or the renderer's chunks with the images. */
  input: InputChunk[];
  /** Tokens the completion may take (the request's limit, within the context). */
  maxTokens: number;
  /** The prompt continues the session's previous prompt and sampled tokens exactly. */
  bridged: boolean;
  /** Which message each prompt token came from (null: not worked out). */
  spans: MessageSpan[] | null;
  /** Tokens cut from the prompt's middle to fit the context (0: none; see {@link cutPrompt}). */
  truncated: number;
}

/**
 * The prompt of a request, continuing `previous` (the session's previous turn, which the
 * request extends) token for token where it can (./bridge.ts); a 400
 * `context_length_exceeded` when it leaves no room in the context, unless `keepHead` (the
 * opt-in `proxy.truncate_keep_head`) says to cut it ({@link cutPrompt}). A completion limit
 * beyond the context is lowered to what is left (OpenClaw asks for its model's configured
 * maximum, whatever the prompt).
 */
export function renderPrompt(
  renderer: Renderer,
  req: Pick<ParsedRequest, "messages" | "tools" | "sampling">,
  o: {
    contextLength: number;
    defaultMaxTokens: number;
    previous?: PreviousTurn | null;
    /** A main turn (trained); images are sampled in side turns only. */
    main?: boolean;
    keepHead?: number | null;
  },
): RenderedPrompt {
  const messages = renderer.declareTools(req.messages, req.tools);
  let { tokens, input, bridged, spans } = hasImages(messages)
    ? imagePrompt(renderer, messages, o.main ?? false)
    : { ...bridgePrompt(renderer, messages, o.previous ?? null), input: null };
  let truncated = 0;
  // An image prompt is never cut: its chunks would no longer match the cut tokens.
  if (o.contextLength - tokens.length < 1 && o.keepHead != null && input === null) {
    const answer = Math.min(req.sampling.maxTokens ?? o.defaultMaxTokens, o.defaultMaxTokens);
    ({ tokens, spans, truncated } = cutPrompt(tokens, spans, {
      keepHead: o.keepHead,
      keep: o.contextLength - answer,
    }));
  }
  const room = o.contextLength - tokens.length;
  if (room < 1) {
    throw new ProxyError(
      400,
      `This model's maximum context length is ${o.contextLength} tokens; the messages ` +
        `(with the tools) take ${tokens.length}, which leaves no room for a completion` +
        (o.keepHead == null ? "" : " (proxy.truncate_keep_head leaves too little to cut)"),
      { param: "messages", code: "context_length_exceeded" },
    );
  }
  return {
    messages,
    tokens,
    input: input ?? [{ type: "encoded_text", tokens }],
    maxTokens: Math.min(req.sampling.maxTokens ?? o.defaultMaxTokens, room),
    bridged,
    spans,
    truncated,
  };
}

/**
 * The opt-in cut of a prompt that does not fit (`proxy.truncate_keep_head`): its first
 * `keepHead` tokens (the head of the system prompt: who the agent is) and its newest tokens,
 * `keep` in all; the tokens between are dropped, and their count is returned (recorded on the
 * turn, never silent). Spans are cut the same way. Nothing is cut when the head alone would
 * not leave room for the newest tokens (`keepHead >= keep`): the caller then refuses the prompt.
 */
export function cutPrompt(
  tokens: number[],
  spans: MessageSpan[] | null,
  { keepHead, keep }: { keepHead: number; keep: number },
): { tokens: number[]; spans: MessageSpan[] | null; truncated: number } {
  if (tokens.length <= keep || keepHead >= keep) return { tokens, spans, truncated: 0 };
  const dropped = tokens.length - keep;
  const tailStart = keepHead + dropped;
  const cut = spans?.flatMap(([a, b, m]): MessageSpan[] => {
    const out: MessageSpan[] = [];
    if (a < keepHead) out.push([a, Math.min(b, keepHead), m]);
    if (b > tailStart) out.push([Math.max(a, tailStart) - dropped, b - dropped, m]);
    return out;
  }) ?? null;
  return {
    tokens: [...tokens.slice(0, keepHead), ...tokens.slice(tailStart)],
    spans: cut,
    truncated: dropped,
  };
}

function hasImages(messages: Message[]): boolean {
  return messages.some((m) => m.parts?.some((p) => p.type === "image"));
}

/**
 * A prompt with images: the renderer's model input, the images as the wire's image chunks. A
 * main turn is refused (its training data would hold the text without the images), as is a
 * format that takes no images; its text tokens count toward the context (the images' own
 * tokens are the sampler's to count).
 */
function imagePrompt(
  renderer: Renderer,
  messages: Message[],
  main: boolean,
): { tokens: number[]; input: InputChunk[]; bridged: false; spans: null } {
  if (main) {
    throw new ProxyError(
      400,
      "images are sampled in side turns only (X-Turn-Type: side): a main turn is trained, and " +
        "its training data would hold the text without the images",
      { param: "messages", code: "image_in_main_turn" },
    );
  }
  let input: InputChunk[];
  try {
    input = renderer.buildGenerationInput(messages);
  } catch (e) {
    throw new ProxyError(400, `this model takes no images: ${(e as Error).message}`, {
      param: "messages",
      code: "image_not_supported",
    });
  }
  const tokens = input.flatMap((c) => (c.type === "encoded_text" ? c.tokens : []));
  return { tokens, input, bridged: false, spans: null };
}

/** Samples the request's choices; sampler failures become 400 (its refusal) or 502. */
export async function sampleChoices(
  sampler: Sampler,
  renderer: Renderer,
  prompt: RenderedPrompt,
  req: Pick<ParsedRequest, "sampling">,
  contextLength: number,
): Promise<SampledChoice[]> {
  const s = req.sampling;
  // Stop strings and stop token ids cannot be mixed: with a client's strings, the renderer's
  // stop tokens go as their text.
  const stop = s.stop.length ? [...stopTexts(renderer), ...s.stop] : renderer.stopSequences();
  const res = await samplerCall(() =>
    sampler.sample({
      prompt: { chunks: prompt.input },
      numSamples: s.n,
      samplingParams: {
        maxTokens: prompt.maxTokens,
        temperature: s.temperature,
        topP: s.topP,
        topK: s.topK,
        seed: s.seed,
        stop,
      },
    })
  );
  const choices = res.sequences.map((q) => parseChoice(renderer, q, s.stop));
  if (s.topLogprobs > 0) {
    await Promise.all(
      choices.map(async (c) => {
        c.topLogprobs = await topLogprobs(sampler, prompt, c.tokens, s.topLogprobs, {
          contextLength,
        });
      }),
    );
  }
  return choices;
}

/**
 * The top-k alternatives at each completion position, read as prompt log-probs of prompt +
 * completion (the sampler's raw distribution, as the log-probs themselves). A completion that
 * fills the context has none for its last token.
 */
async function topLogprobs(
  sampler: Sampler,
  prompt: RenderedPrompt,
  completion: number[],
  k: number,
  { contextLength }: { contextLength: number },
): Promise<[number, number][][]> {
  const fits = Math.min(completion.length, contextLength - 1 - prompt.tokens.length);
  const res = await samplerCall(() =>
    sampler.sample({
      prompt: {
        chunks: [...prompt.input, { type: "encoded_text", tokens: completion.slice(0, fits) }],
      },
      numSamples: 1,
      samplingParams: { maxTokens: 1 },
      topkPromptLogprobs: k,
    })
  );
  // The completion's positions are the last ones (an image's own count is the sampler's).
  const top = res.topk_prompt_logprobs ?? [];
  const at = top.length - fits;
  return completion.map((_, i) => (i < fits ? top[at + i] ?? [] : []));
}

async function samplerCall(call: () => PromiseLike<SampleResponse>): Promise<SampleResponse> {
  try {
    return await call();
  } catch (e) {
    const message = (e as Error).message;
    const refused = (e instanceof RequestFailedError && e.category === "user") ||
      (e instanceof TinkerAPIError && e.status >= 400 && e.status < 500 && e.status !== 429);
    if (refused) {
      throw new ProxyError(400, `the sampler refused the request: ${message}`, {
        code: "sampler_refused",
      });
    }
    throw new ProxyError(502, `the sampler failed: ${message}`, { code: "sampler_error" });
  }
}
