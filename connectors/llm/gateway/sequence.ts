import type { LlmDrift, LlmTokens } from '../../../schemas/index.js';

/**
 * One episode's token sequence behind the gateway: the text the template rendered so far with the last reply, and
 * the ids the engine was given and sampled. A call's prompt extends the sequence when its rendering starts with that
 * text: then only the new part is tokenised and the sampled ids stand as they were (never re-tokenised). Otherwise
 * the prompt is tokenised whole, and where it does not start with the previous ids either, that is drift.
 */
export interface SequenceTokenizer {
  tokenize(text: string, addSpecial: boolean, signal?: AbortSignal): Promise<number[]>;
}

export interface PromptTokens {
  readonly promptIds: number[];
  readonly tokens: Omit<LlmTokens, 'completionIds'>;
}

export class EpisodeSequence {
  /** The last call's rendered prompt followed by its reply's text; null before the first call. */
  private text: string | null = null;
  private ids: number[] = [];
  /** The last completion ended with the end-of-generation token, which the template writes again after the reply. */
  private endedWithEos = false;

  constructor(
    private readonly tokenizer: SequenceTokenizer,
    /** The end-of-generation token's text (null where unknown: then the template's copy of it is tokenised again). */
    private readonly eosToken: string | null,
  ) {}

  /** The prompt ids for a rendering, and how they relate to the sequence so far. Leaves the sequence as it was. */
  async prompt(rendered: string, signal?: AbortSignal): Promise<PromptTokens> {
    if (this.text !== null && rendered.startsWith(this.text)) {
      let rest = rendered.slice(this.text.length);
      // The sampled end-of-generation token is the template's end of the reply: it is not tokenised a second time.
      if (this.endedWithEos && this.eosToken !== null && rest.startsWith(this.eosToken)) rest = rest.slice(this.eosToken.length);
      const appended = rest === '' ? [] : await this.tokenizer.tokenize(rest, false, signal);
      const promptIds = [...this.ids, ...appended];
      return { promptIds, tokens: { appendedPromptIds: appended, promptLength: promptIds.length, extendsPrevious: true } };
    }
    const promptIds = await this.tokenizer.tokenize(rendered, true, signal);
    if (this.text === null) return { promptIds, tokens: { appendedPromptIds: promptIds, promptLength: promptIds.length, extendsPrevious: false } };
    const matching = commonPrefix(this.ids, promptIds);
    // Text that differs but tokenises to the same ids (whitespace a template normalises, say) still extends.
    if (matching === this.ids.length) {
      const appended = promptIds.slice(matching);
      return { promptIds, tokens: { appendedPromptIds: appended, promptLength: promptIds.length, extendsPrevious: true } };
    }
    const drift: LlmDrift = { previousTokens: this.ids.length, matchingTokens: matching };
    return { promptIds, tokens: { appendedPromptIds: promptIds, promptLength: promptIds.length, extendsPrevious: false, drift } };
  }

  /** Records a sampled reply: the sequence is now `promptIds` + `completionIds`, its text `rendered` + `reply`. */
  advance(rendered: string, promptIds: readonly number[], reply: string, completionIds: readonly number[], endedWithEos: boolean): void {
    this.text = rendered + reply;
    this.ids = [...promptIds, ...completionIds];
    this.endedWithEos = endedWithEos;
  }
}

export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
