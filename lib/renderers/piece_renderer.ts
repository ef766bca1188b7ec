/**
 * The renderer of a chat template written as pieces: a format gives its conversation as pieces
 * (`pieces(messages, addGenerationPrompt, trainOn)`) and its stop tokens, and this base turns
 * them into the {@link Renderer} members every such format shares — the rendered text, the
 * generation prompt, the supervised example and the sampled text up to a stop token. What
 * differs between formats stays in the format: its pieces, its stops, what it writes after the
 * final stop token, and how it parses a response.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import {
  chunksWithImages,
  encodePieces,
  messageImages,
  type Piece,
  piecesText,
  refuseImages,
  untilStop,
} from "./pieces.ts";
import { qwen3DeclareTools } from "./tools.ts";
import type {
  InputChunk,
  Message,
  ParsedResponse,
  Renderer,
  SupervisedExample,
  ToolSpec,
  TrainOn,
} from "./types.ts";

/**
 * A chat format rendered from pieces. Subclasses implement {@link PieceRenderer.pieces} and
 * {@link PieceRenderer.parseResponse}.
 *
 * @example
 * class Plain extends PieceRenderer {
 *   constructor(tokenizer: Tokenizer) {
 *     super(tokenizer, [tokenizer.eosTokenId]);
 *   }
 *   protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn) {
 *     return messages.map((m, i) => ({ text: m.content, train: trainedTurn(messages, i, trainOn) }));
 *   }
 *   parseResponse(tokens: number[]) {
 *     const { text, stopped } = this.responseText(tokens);
 *     return { message: { role: "assistant", content: text }, ok: stopped };
 *   }
 * }
 */
export abstract class PieceRenderer implements Renderer {
  readonly tokenizer: Tokenizer;
  readonly #stops: readonly number[];
  readonly #afterStop: string;

  /**
   * `stops` end sampling; `afterStop` is the piece the template writes after the final stop
   * token (e.g. Qwen3's newline), which a supervised example leaves out, as a sampled turn ends
   * at its stop token.
   */
  protected constructor(tokenizer: Tokenizer, stops: readonly number[], afterStop = "") {
    this.tokenizer = tokenizer;
    this.#stops = [...stops];
    this.#afterStop = afterStop;
  }

  /** The conversation as pieces, trained where `trainOn` says, with the assistant's opening. */
  protected abstract pieces(
    messages: Message[],
    addGenerationPrompt: boolean,
    trainOn: TrainOn,
  ): Piece[];

  /** The assistant message in sampled tokens. */
  abstract parseResponse(tokens: number[]): ParsedResponse;

  /** The rendered text, as the chat template writes it. */
  renderText(messages: Message[], addGenerationPrompt: boolean): string {
    return piecesText(this.pieces(messages, addGenerationPrompt, "last_assistant"));
  }

  /**
   * The markup around an image in this format (`slot` stands for the image), or null for a
   * format that takes no images (the default).
   */
  protected imageMarkup(_slot: string): string | null {
    return null;
  }

  /** Tokens of the messages followed by the opening of the assistant's turn. */
  buildGenerationPrompt(messages: Message[]): number[] {
    this.#noImages(messages, "buildGenerationInput sends them as image chunks");
    return this.tokenizer.encode(this.renderText(messages, true));
  }

  /** The generation prompt as wire chunks, images as image chunks where the format puts them. */
  buildGenerationInput(messages: Message[]): InputChunk[] {
    if (this.imageMarkup("") === null) refuseImages(messages, this.constructor.name);
    return chunksWithImages(
      this.tokenizer,
      this.renderText(messages, true),
      messageImages(messages),
    );
  }

  #noImages(messages: Message[], why: string): void {
    if (this.imageMarkup("") === null) refuseImages(messages, this.constructor.name);
    else if (messageImages(messages).length) {
      throw new Error(`${this.constructor.name}: token ids cannot carry images; ${why}`);
    }
  }

  /** Tokens of the conversation, weight 1 on the trained turns, ending at the final stop. */
  buildSupervisedExample(
    messages: Message[],
    { trainOn = "last_assistant" }: { trainOn?: TrainOn } = {},
  ): SupervisedExample {
    this.#noImages(messages, "supervised examples with images are not built here");
    const pieces = this.pieces(messages, false, trainOn);
    if (this.#afterStop && pieces.at(-1)?.text === this.#afterStop) pieces.pop();
    return encodePieces(this.tokenizer, pieces);
  }

  /**
   * The messages with the tools declared: Qwen3's `# Tools` section in the system message,
   * which formats with their own declaration override.
   */
  declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return qwen3DeclareTools(messages, tools);
  }

  /** Token ids that end sampling (a format whose end is text overrides this). */
  stopSequences(): number[] | string[] {
    return [...this.#stops];
  }

  /** The stop token ids this format was made with. */
  protected get stopTokenIds(): readonly number[] {
    return this.#stops;
  }

  /** The text of sampled tokens up to the first stop token, and whether there was one. */
  protected responseText(tokens: number[]): { text: string; stopped: boolean } {
    const { body, stopped } = untilStop(tokens, this.#stops);
    return { text: this.tokenizer.decode(body), stopped };
  }
}
