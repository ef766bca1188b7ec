/**
 * Rendered text as pieces with a training flag, and their tokens: the renderers of the Hugging
 * Face families build a conversation as pieces, and encode adjacent pieces of the same weight
 * together, as the whole text would be encoded (`apply_chat_template` then `encode`), so the
 * tokens equal the template's wherever a weight change falls on a special token.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import type { ImagePart, InputChunk, Message, SupervisedExample, TrainOn } from "./types.ts";

/** A piece of rendered text; `train` marks text the assistant produced in a trained turn. */
export interface Piece {
  /** The piece's text. */
  text: string;
  /** Whether its tokens are trained (loss weight 1). */
  train: boolean;
}

/** Pieces to tokens and weights (1 on trained pieces). */
export function encodePieces(tokenizer: Tokenizer, pieces: readonly Piece[]): SupervisedExample {
  const tokens: number[] = [];
  const weights: number[] = [];
  for (let i = 0; i < pieces.length;) {
    let text = "";
    const train = pieces[i].train;
    for (; i < pieces.length && pieces[i].train === train; i++) text += pieces[i].text;
    const ids = tokenizer.encode(text);
    tokens.push(...ids);
    weights.push(...ids.map(() => (train ? 1 : 0)));
  }
  return { tokens, weights };
}

/** The text of pieces. */
export function piecesText(pieces: readonly Piece[]): string {
  return pieces.map((p) => p.text).join("");
}

/** Whether the assistant message at `i` is trained under `trainOn`. */
export function trainedTurn(messages: readonly Message[], i: number, trainOn: TrainOn): boolean {
  if (messages[i].role !== "assistant") return false;
  if (trainOn === "all_assistant") return true;
  return messages.findLastIndex((m) => m.role === "assistant") === i;
}

/** The tokens of a response up to its first stop token, and whether it had one. */
export function untilStop(
  tokens: readonly number[],
  stops: readonly number[],
): { body: number[]; stopped: boolean } {
  const end = tokens.findIndex((t) => stops.includes(t));
  return end >= 0
    ? { body: tokens.slice(0, end), stopped: true }
    : { body: [...tokens], stopped: false };
}

/** Where an image sits in rendered text until it becomes an image chunk (private-use chars). */
export const IMAGE_SLOT = "\uE000image\uE000";

/** The images of the messages, in order. */
export function messageImages(messages: readonly Message[]): ImagePart[] {
  return messages.flatMap((m) => (m.parts ?? []).filter((p): p is ImagePart => p.type === "image"));
}

/**
 * A message's text with each image as `wrap(IMAGE_SLOT)` (the format's markup around it), or
 * its `content` when it has no parts.
 */
export function contentWithImages(m: Message, wrap: (slot: string) => string): string {
  if (!m.parts) return m.content;
  return m.parts.map((p) => (p.type === "text" ? p.text : wrap(IMAGE_SLOT))).join("");
}

/** An error for images given to a renderer whose format takes none (nothing dropped silently). */
export function refuseImages(messages: readonly Message[], format: string): void {
  if (messageImages(messages).length) {
    throw new Error(`${format} takes no images: a message has an image part`);
  }
}

/**
 * Rendered text as wire chunks: the text between image slots encoded, each slot the next
 * image's chunk.
 */
export function chunksWithImages(
  tokenizer: Tokenizer,
  text: string,
  images: readonly ImagePart[],
): InputChunk[] {
  const texts = text.split(IMAGE_SLOT);
  if (texts.length - 1 !== images.length) {
    throw new Error(`${images.length} images but ${texts.length - 1} places for them`);
  }
  const out: InputChunk[] = [];
  texts.forEach((t, i) => {
    if (t) out.push({ type: "encoded_text", tokens: tokenizer.encode(t) });
    const img = images[i];
    if (img) out.push({ type: "image", data: img.data, format: img.format });
  });
  return out;
}
