import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { checkoutFile } from './checkout.js';
import { LlmCall, llmTrainingSamples, Step, type LlmTokens } from './trajectory.js';

const call = (index: number, tokens: LlmTokens | null, policyVersion: number | null = null, finishReason = 'stop'): { index: number; llm: LlmCall } => ({
  index,
  llm: LlmCall.parse({ model: 'm', content: '{}', finishReason, promptTokens: null, completionTokens: null, logprobs: tokens ? tokens.completionIds.map((_, i) => -i - 1) : null, latencyMs: 1, attempts: 1, tokens, policyVersion }),
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

test('turns that extend each other make one sample: the first prompt, then everything after it with the mask 1 exactly on the sampled tokens', () => {
  const [sample, ...rest] = llmTrainingSamples([
    call(0, { appendedPromptIds: [1, 2, 3], promptLength: 3, extendsPrevious: false, completionIds: [10, 11] }, 0),
    { index: 1, llm: null },
    call(2, { appendedPromptIds: [4], promptLength: 6, extendsPrevious: true, completionIds: [12] }, 1, 'length'),
  ]);
  assert.deepEqual(rest, []);
  assert.deepEqual(sample, {
    sampleIndex: 0,
    promptIds: [1, 2, 3],
    completionIds: [10, 11, 4, 12],
    completionMask: [1, 1, 0, 1],
    completionLogprobs: [-1, -2, 0, -1],
    completionPolicyVersions: [0, 0, -1, 1],
    turnPolicyVersions: [0, 1],
    stepIndices: [0, 2],
    truncated: true,
  });
});

test('a prompt that does not extend the sequence so far starts a new sample (the prefix rule); one whose start is missing starts none', () => {
  const samples = llmTrainingSamples([
    call(0, { appendedPromptIds: [1], promptLength: 1, extendsPrevious: false, completionIds: [10] }),
    // Re-rendered by the server (vLLM): the whole prompt again.
    call(1, { appendedPromptIds: [1, 10, 5], promptLength: 3, extendsPrevious: false, completionIds: [11] }),
    // Claims to extend, but its length does not fit what came before, and its start is not recorded.
    call(2, { appendedPromptIds: [7], promptLength: 9, extendsPrevious: true, completionIds: [12] }),
    // So the next extending turn joins nothing either.
    call(3, { appendedPromptIds: [6], promptLength: 11, extendsPrevious: true, completionIds: [14] }),
    call(4, { appendedPromptIds: [8], promptLength: 1, extendsPrevious: false, completionIds: [13] }),
    // A turn without token ids (a text-only server) is no sample.
    call(5, null),
  ]);
  assert.deepEqual(samples.map((s) => [s.sampleIndex, s.promptIds, s.completionIds, s.stepIndices]), [
    [0, [1], [10], [0]],
    [1, [1, 10, 5], [11], [1]],
    [2, [8], [13], [4]],
  ]);
  assert.deepEqual(samples[0]!.completionPolicyVersions, [-1], 'a turn without a policy version has none per token');
});

test('the TypeScript rule builds the fixture samples the Python learner (llm-learner/tests/test_samples.py) builds too', () => {
  const fixture = JSON.parse(readFileSync(checkoutFile('llm-learner/tests/fixtures/training-samples.json'), 'utf8')) as { cases: Array<{ name: string; steps: unknown[]; samples: unknown }> };
  assert.ok(fixture.cases.length >= 3);
  for (const { name, steps, samples } of fixture.cases) {
    const parsed = steps.map((step) => {
      const { index, llm } = step as { index: number; llm: unknown };
      return { index, llm: llm === null ? null : LlmCall.parse(llm) };
    });
    assert.deepEqual(llmTrainingSamples(parsed), samples, name);
  }
});

test('a drifted turn (re-sent history that parted from what was sampled) parses with where it parted, and starts a new sample', () => {
  const drifted = { appendedPromptIds: [1, 10, 6], promptLength: 3, extendsPrevious: false, completionIds: [12], drift: { previousTokens: 4, matchingTokens: 2 } };
  assert.deepEqual(LlmCall.parse({ ...call(0, null).llm, tokens: drifted }).tokens!.drift, { previousTokens: 4, matchingTokens: 2 });
  assert.equal(LlmCall.parse({ ...call(0, null).llm, tokens: { ...drifted, drift: undefined } }).tokens!.drift, undefined, 'absent where nothing drifted (and on older records)');
  assert.throws(() => LlmCall.parse({ ...call(0, null).llm, tokens: { ...drifted, drift: { previousTokens: -1, matchingTokens: 0 } } }), /too_small|>=0/);
  const samples = llmTrainingSamples([
    call(0, { appendedPromptIds: [1], promptLength: 1, extendsPrevious: false, completionIds: [10] }),
    call(1, { appendedPromptIds: [5], promptLength: 3, extendsPrevious: true, completionIds: [11] }),
    call(2, drifted),
  ]);
  assert.deepEqual(samples.map((s) => s.stepIndices), [[0, 1], [2]]);
  assert.deepEqual(samples[1]!.promptIds, [1, 10, 6]);
  // A record that claims to extend yet says it drifted is not trusted to extend.
  const contradictory = llmTrainingSamples([call(0, { appendedPromptIds: [1], promptLength: 1, extendsPrevious: false, completionIds: [10] }), call(1, { appendedPromptIds: [5], promptLength: 3, extendsPrevious: true, completionIds: [11], drift: { previousTokens: 2, matchingTokens: 1 } })]);
  assert.deepEqual(contradictory.map((s) => s.stepIndices), [[0]]);
});
