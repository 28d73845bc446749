import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { envToolSpecs, PROGRAM_REPAIR, PROGRAM_REPAIR_ENV, type RepairObservation } from '../../envs/index.js';
import { checkPairing, INVALID_REPLY, LLM_POLICY, linearRepairKind, onnxRepairKind, policyKind, resolveLlmPolicyOptions, seededRandom, type AnyPolicyKind } from '../../policies/index.js';
import { ConfigError, isRetriable, STACK_LLM_URL, TrialrunError } from '../../schemas/index.js';
import { llmComponent, stackUp } from '../../stack/index.js';
import { clampEdits, failingRun, repairObservation } from '../fixtures/repair-observation.js';

/**
 * The contract every PolicyKind keeps (policies/types.ts), run over each built-in kind: linear-repair, onnx-repair
 * (onnxruntime-node) and llm (against the stack's real llama.cpp server, which its `before` brings up idempotently).
 * Each acts in program-repair/v1, the one environment all three serve.
 */
const llmSettings = { llm: resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, maxTokensPerTurn: 48, seed: 7 }, {}) };
const KINDS: ReadonlyArray<{ readonly name: string; kind(): AnyPolicyKind<unknown> }> = [
  { name: linearRepairKind.policyId, kind: () => linearRepairKind as AnyPolicyKind<unknown> },
  { name: onnxRepairKind.policyId, kind: () => onnxRepairKind as AnyPolicyKind<unknown> },
  { name: LLM_POLICY, kind: () => policyKind(LLM_POLICY, llmSettings) },
];

/** Tests failing on `clamp` and its candidate edits listed: where a learned choice is the next move. */
const choosing: RepairObservation = repairObservation({ lastTests: failingRun, baselineTests: failingRun, edits: clampEdits });
const toolNames = new Set(envToolSpecs(PROGRAM_REPAIR).map((tool) => tool.name));

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
});

for (const { name, kind: make } of KINDS) {
  describe(`PolicyKind contract: ${name}`, () => {
    const kind = make();

    it('is found by its id, and serves program-repair/v1', () => {
      assert.equal(policyKind(kind.policyId, llmSettings).policyId, kind.policyId);
      assert.ok(kind.serves === 'any' || kind.serves.length > 0);
      checkPairing(kind, PROGRAM_REPAIR_ENV);
    });

    it('writes its parameters and optimizer state as artifacts that read back to the same bytes', () => {
      const { params, optimizer } = kind.initial();
      const bytes = kind.encodeParams(params);
      assert.deepEqual(kind.encodeParams(kind.decodeParams(bytes)), bytes);
      const state = kind.encodeOptimizer(optimizer);
      assert.deepEqual(kind.encodeOptimizer(kind.decodeOptimizer(state)), state);
      assert.ok(kind.inlineWeights(params).every(Number.isFinite));
    });

    it('refuses an artifact that is not its own with an error naming the kind, never retried', () => {
      assert.throws(
        () => kind.decodeParams(Buffer.from('not an artifact')),
        (error: unknown) => error instanceof TrialrunError && !isRetriable(error) && error.message.includes(kind.policyId),
      );
    });

    it('loads as a policy of its id and version that answers an observation with a call of one of the environment\'s tools', { timeout: 300_000 }, async () => {
      const policy = await kind.load(kind.initial().params, 7);
      assert.deepEqual([policy.policyId, policy.version], [kind.policyId, 7]);
      const actor = policy.startEpisode?.(PROGRAM_REPAIR) ?? policy;
      const action = await actor.act(choosing, seededRandom('policy-kind-contract'));
      if (action.invalid !== undefined) assert.equal(action.action.name, INVALID_REPLY, 'an invalid reply is recorded under its own name');
      else assert.ok(toolNames.has(action.action.name), `${action.action.name} is a program-repair tool`);
      if (kind.policyId === LLM_POLICY) assert.ok(action.llm, 'a model\'s reply carries its call record');
    });

    it('takes a training step where the in-process learner trains it, and refuses one where it does not', async () => {
      const { params, optimizer } = kind.initial();
      if (kind.trainable === 'external' || kind.trainable === false) {
        await assert.rejects(kind.update(params, optimizer, [], {}), ConfigError);
        return;
      }
      const policy = await kind.load(params, 0);
      const { decision } = await policy.act(choosing, seededRandom('policy-kind-contract'));
      assert.ok(decision, 'the choice among the candidate edits is a learned decision');
      const step = await kind.update(params, optimizer, [{ decisions: [decision], advantage: 1, weight: 1 }], {});
      assert.ok(Number.isFinite(step.gradNorm) && step.gradNorm > 0);
      assert.notDeepEqual(kind.encodeParams(step.params), kind.encodeParams(params), 'the step moved the parameters');
    });
  });
}
