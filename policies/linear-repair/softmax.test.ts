import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../types.js';
import { chooseIndex, greedyIndex, sampleIndex } from './softmax.js';

const uniform = (n: number): number[] => Array.from({ length: n }, () => -Math.log(n));

test('greedy decoding takes the most probable candidate, whatever the draw', () => {
  const logProbs = [Math.log(0.2), Math.log(0.5), Math.log(0.3)];
  for (const u of [0, 0.1, 0.5, 0.99]) assert.equal(greedyIndex(logProbs, () => u), 1);
  assert.equal(chooseIndex(logProbs, () => 0.05, 'sample'), 0, 'sampling follows the draw');
  assert.equal(chooseIndex(logProbs, () => 0.05, 'greedy'), 1);
});

test('greedy decoding breaks a tie among the best with one uniform draw, never picking a worse candidate', () => {
  const logProbs = [Math.log(0.1), Math.log(0.45), Math.log(0.45)];
  assert.equal(greedyIndex(logProbs, () => 0.2), 1);
  assert.equal(greedyIndex(logProbs, () => 0.7), 2);
  assert.equal(greedyIndex(logProbs, () => 0.999999), 2);
});

test('when every candidate ties, greedy decoding is the very draw sampling makes (an untrained run replays)', () => {
  for (const n of [1, 2, 3, 7, 16]) {
    const a = seededRandom(`tie-${n}`);
    const b = seededRandom(`tie-${n}`);
    for (let i = 0; i < 200; i++) assert.equal(greedyIndex(uniform(n), a), sampleIndex(uniform(n), b));
  }
});
