import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seededRandom, type PolicySample } from '../types.js';
import { sampleIndex } from '../linear-repair/index.js';
import { ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { freshAdamState, initialParams, type OnnxParams } from './params.js';
import { OnnxScorer } from './policy.js';
import { OnnxTrainer } from './trainer.js';

let trainer: OnnxTrainer;
let scorer: OnnxScorer;
before(async () => {
  [trainer, scorer] = await Promise.all([OnnxTrainer.create(), OnnxScorer.create()]);
});
after(async () => {
  await Promise.all([trainer.release(), scorer.release()]);
});

const at = (name: string): number => ONNX_REPAIR_FEATURE_NAMES.indexOf(name);
const KINDS = ['kind:compare-op', 'kind:off-by-one', 'kind:arith-op', 'kind:bool-op'];

/**
 * A contextual bandit that needs the hidden layer: the right edit is a compare-op when the tests failed
 * on an assertion and an off-by-one when they raised, so no linear score over the features gets both.
 */
function task(random: () => number): { features: number[][]; correct: number } {
  const assertion = random() < 0.5;
  const features = KINDS.map((kind) => {
    const row = ONNX_REPAIR_FEATURE_NAMES.map(() => 0);
    row[at(kind)] = 1;
    row[at(assertion ? 'failure:assertion' : 'failure:lookup')] = 1;
    row[at('relative-line')] = random();
    return row;
  });
  return { features, correct: KINDS.indexOf(assertion ? 'kind:compare-op' : 'kind:off-by-one') };
}

async function successRate(params: OnnxParams, tasks: { features: number[][]; correct: number }[]): Promise<number> {
  const logProbs = await scorer.logProbs(params, tasks.map((t) => t.features));
  return tasks.reduce((sum, t, i) => sum + Math.exp(logProbs[i]![t.correct]!), 0) / tasks.length;
}

test('group-relative PPO updates learn a choice that needs a feature interaction', async () => {
  const random = seededRandom('bandit');
  const heldOut = Array.from({ length: 200 }, () => task(random));
  let params = initialParams('bandit', { hiddenSize: 16 });
  let adam = freshAdamState(params);
  const before = await successRate(params, heldOut);
  assert.ok(Math.abs(before - 0.25) < 1e-6, 'the untrained policy is uniform over 4 edits');
  for (let update = 0; update < 60; update++) {
    const samples: PolicySample[] = [];
    for (let group = 0; group < 8; group++) {
      const t = task(random);
      const [logProbs] = await scorer.logProbs(params, [t.features]);
      const rollouts = Array.from({ length: 4 }, () => {
        const chosen = sampleIndex(logProbs!, random);
        return { chosen, reward: chosen === t.correct ? 1 : 0 };
      });
      const mean = rollouts.reduce((sum, r) => sum + r.reward, 0) / rollouts.length;
      for (const r of rollouts) samples.push({ advantage: r.reward - mean, weight: 1, decisions: [{ features: t.features, chosen: r.chosen, logprob: logProbs![r.chosen]! }] });
    }
    ({ params, adamState: adam } = await trainer.update(params, adam, samples, { epochs: 2 }));
  }
  const afterTraining = await successRate(params, heldOut);
  assert.ok(afterTraining > 0.8, `success probability ${afterTraining.toFixed(3)} after 60 updates (from ${before.toFixed(3)}); a linear scorer tops out at 0.5`);
  assert.equal(adam.step, 120);
});

test('update metrics, an empty batch, and refused inputs', async () => {
  const params = initialParams('metrics', { hiddenSize: 4 });
  const adam = freshAdamState(params);
  const row = (i: number): number[] => ONNX_REPAIR_FEATURE_NAMES.map((_, j) => (j === i ? 1 : 0));
  const decision = { features: [row(0), row(1), row(2)], chosen: 1, logprob: Math.log(1 / 3) };
  const result = await trainer.update(params, adam, [{ advantage: 1, weight: 1, decisions: [decision] }, { advantage: -1, weight: 1, decisions: [] }]);
  assert.deepEqual(
    { samples: result.metrics.samples, decisions: result.metrics.decisions, epochs: result.metrics.epochs, clipFraction: result.metrics.clipFraction },
    { samples: 2, decisions: 1, epochs: 1, clipFraction: 0 },
  );
  assert.ok(Math.abs(result.metrics.loss + 0.5) < 1e-6, 'ratio 1, advantage 1, over 2 samples');
  assert.ok(Math.abs(result.metrics.entropy - Math.log(3)) < 1e-5);
  assert.ok(result.metrics.approxKl < 1e-6 && result.metrics.gradNorm > 0);
  assert.equal(result.adamState.step, 1);

  const empty = await trainer.update(params, adam, [{ advantage: 1, weight: 1, decisions: [] }]);
  assert.equal(empty.params, params);
  assert.equal(empty.adamState, adam);
  assert.equal(empty.metrics.decisions, 0);

  const bad = [
    { advantage: 1, weight: 1, decisions: [{ ...decision, chosen: 3 }] },
    { advantage: Number.NaN, weight: 1, decisions: [{ ...decision, features: [[1, 2]] , chosen: 0 }] },
  ];
  await assert.rejects(trainer.update(params, adam, bad), (error: Error) => {
    assert.match(error.message, /sample 0 decision 0: chosen 3 is not one of its 3 candidates/);
    assert.match(error.message, /sample 1 decision 0: advantage NaN/);
    assert.match(error.message, new RegExp(`sample 1 decision 0: candidate 0 needs ${ONNX_REPAIR_FEATURE_NAMES.length} finite features, has 2`));
    return true;
  });
  await assert.rejects(trainer.update(params, adam, [], { clip: 1.5 }), /OnnxUpdateOptions\.clip must be a number in \(0, 1\), got 1\.5/);
  await assert.rejects(trainer.update(params, adam, [], { epochs: 0 }), /OnnxUpdateOptions\.epochs/);
  await assert.rejects(trainer.update(params, freshAdamState(initialParams('x', { hiddenSize: 5 })), []), /adamState\.m/);
});
