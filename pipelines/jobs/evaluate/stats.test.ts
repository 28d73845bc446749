import assert from 'node:assert/strict';
import test from 'node:test';
import { compareRates, differenceInterval, wilsonInterval } from './stats.js';

const close = (actual: number, expected: number, tolerance = 5e-4): void => assert.ok(Math.abs(actual - expected) < tolerance, `${actual} is not ${expected}`);

test('the Wilson interval matches the textbook values and stays inside [0, 1]', () => {
  // Newcombe (1998), table I: 81/263 -> 0.2553-0.3662; 0/10 -> 0-0.2775.
  const a = wilsonInterval(81, 263);
  close(a.low, 0.2553);
  close(a.high, 0.3662);
  const b = wilsonInterval(0, 10);
  assert.equal(b.low, 0);
  close(b.high, 0.2775);
  const all = wilsonInterval(4, 4);
  close(all.low, 0.5101);
  assert.equal(all.high, 1);
  assert.deepEqual(wilsonInterval(0, 0), { low: 0, high: 1 }, 'no episodes: nothing known');
  assert.throws(() => wilsonInterval(3, 2), /0 <= passes <= n/);
  assert.throws(() => wilsonInterval(1.5, 2), RangeError);
});

test("the difference interval is Newcombe's hybrid score interval", () => {
  // Newcombe (1998b), example (a): 56/70 - 48/80 = 0.2, 95% interval 0.0524 to 0.3339.
  const d = differenceInterval({ successes: 48, n: 80 }, { successes: 56, n: 70 });
  close(d.low, 0.0524);
  close(d.high, 0.3339);
});

test('a comparison says improved only when the difference interval excludes 0', () => {
  const clear = compareRates({ successes: 20, episodes: 200 }, { successes: 60, episodes: 200 });
  assert.equal(clear.verdict, 'improved');
  assert.equal(clear.ratio, 3);
  assert.ok(clear.difference.interval.low > 0);
  assert.equal(compareRates({ successes: 20, episodes: 100 }, { successes: 25, episodes: 100 }).verdict, 'within noise');
  assert.equal(compareRates({ successes: 60, episodes: 200 }, { successes: 20, episodes: 200 }).verdict, 'worse');
  assert.equal(compareRates({ successes: 0, episodes: 50 }, { successes: 5, episodes: 50 }).ratio, null);
});
