import assert from 'node:assert/strict';
import test from 'node:test';
import { decisionAdvantage, type PolicySample } from './types.js';

const decision = { features: [[0], [1]], chosen: 0, logprob: Math.log(0.5) };

test('the last decision earns the outcome, the earlier ones their own credit, all staleness-weighted', () => {
  const sample: PolicySample = { decisions: [decision, decision, decision], advantage: 1.5, earlierAdvantage: -0.5, weight: 0.5 };
  assert.deepEqual([0, 1, 2].map((i) => decisionAdvantage(sample, i)), [-0.25, -0.25, 0.75]);
});

test('without earlier credit every decision earns the outcome', () => {
  const sample: PolicySample = { decisions: [decision, decision], advantage: -1, weight: 1 };
  assert.deepEqual([0, 1].map((i) => decisionAdvantage(sample, i)), [-1, -1]);
});
