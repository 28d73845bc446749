import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LlmCall, llmTokenSequences, Step, type LlmTokens } from './trajectory.js';

const call = (tokens: LlmTokens | null, logprobs: number[] | null = tokens ? tokens.completionIds.map((_, i) => -i - 1) : null): { llm: LlmCall } => ({
  llm: LlmCall.parse({ model: 'm', content: '{}', finishReason: 'stop', promptTokens: null, completionTokens: null, logprobs, latencyMs: 1, attempts: 1, tokens }),
});

test('an older LLM call without the token fields still parses, with them defaulted', () => {
  const old = LlmCall.parse({ model: 'm', content: null, finishReason: null, promptTokens: 1, completionTokens: 1, logprobs: null, latencyMs: 1, attempts: 1 });
  assert.deepEqual(
    { tokens: old.tokens, sampling: old.sampling, tokenizer: old.tokenizer, chatTemplateSha256: old.chatTemplateSha256, policyVersion: old.policyVersion, constrained: old.constrained, invalidReply: old.invalidReply },
    { tokens: null, sampling: null, tokenizer: null, chatTemplateSha256: null, policyVersion: null, constrained: false, invalidReply: null },
  );
  assert.throws(() => LlmCall.parse({ ...old, tokens: { appendedPromptIds: [-1], promptLength: 1, extendsPrevious: false, completionIds: [] } }), /too_small|>=0/);
  assert.ok(Step.shape.llm);
});

test('turns that extend each other make one sequence; the mask is 1 exactly on the sampled tokens', () => {
  const [sequence, ...rest] = llmTokenSequences([
    call({ appendedPromptIds: [1, 2, 3], promptLength: 3, extendsPrevious: false, completionIds: [10, 11] }),
    { llm: null },
    call({ appendedPromptIds: [4], promptLength: 6, extendsPrevious: true, completionIds: [12] }),
  ]);
  assert.deepEqual(rest, []);
  assert.deepEqual(sequence!.ids, [1, 2, 3, 10, 11, 4, 12]);
  assert.deepEqual(sequence!.lossMask, [0, 0, 0, 1, 1, 0, 1]);
  assert.deepEqual(sequence!.logprobs, [0, 0, 0, -1, -2, 0, -1]);
});

test('a prompt that does not extend the sequence so far starts a new one (the prefix rule); one whose start is missing starts none', () => {
  const sequences = llmTokenSequences([
    call({ appendedPromptIds: [1], promptLength: 1, extendsPrevious: false, completionIds: [10] }),
    // Re-rendered by the server (vLLM): the whole prompt again.
    call({ appendedPromptIds: [1, 10, 5], promptLength: 3, extendsPrevious: false, completionIds: [11] }),
    // Claims to extend, but its length does not fit what came before, and its start is not recorded.
    call({ appendedPromptIds: [7], promptLength: 9, extendsPrevious: true, completionIds: [12] }),
    call({ appendedPromptIds: [8], promptLength: 1, extendsPrevious: false, completionIds: [13] }),
  ]);
  assert.deepEqual(sequences.map((s) => s.ids), [[1, 10], [1, 10, 5, 11], [8, 13]]);
});
