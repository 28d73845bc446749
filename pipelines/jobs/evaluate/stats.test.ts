import assert from 'node:assert/strict';
import test from 'node:test';
import { compareMeans, compareRates, differenceInterval, effectiveEpisodes, wilsonInterval, wilsonRateInterval } from './stats.js';

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

test('the Wilson interval of a rate takes an effective count: counts give the same interval, fewer independent episodes a wider one', () => {
  assert.deepEqual(wilsonRateInterval(81 / 263, 263), wilsonInterval(81, 263));
  const worth = wilsonRateInterval(81 / 263, 150.5);
  assert.ok(worth.low < wilsonInterval(81, 263).low && worth.high > wilsonInterval(81, 263).high);
  for (let n = 0.5; n < 60; n += 0.5) {
    assert.equal(wilsonRateInterval(0, n).low, 0, `0 of ${n}`);
    assert.equal(wilsonRateInterval(1, n).high, 1, `${n} of ${n}`);
  }
  assert.throws(() => wilsonRateInterval(1.2, 10), /rate in \[0, 1\]/);
  assert.throws(() => wilsonRateInterval(0.5, Number.NaN), RangeError);
  assert.throws(() => wilsonRateInterval(0.5, -1), RangeError);
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

test("a task's correlated episodes are worth fewer independent ones (Kish's design effect), never more than there are", () => {
  const tasks = (pattern: readonly number[], repeat: number) => Array.from({ length: repeat }, () => pattern.map((successes) => ({ successes, episodes: 2 }))).flat();
  // Every task's two episodes agree: 100 tasks x 2 episodes at 50% carry what 100 independent episodes do (k/(k-1) aside).
  close(effectiveEpisodes(tasks([0, 2], 50)), 99, 1e-9);
  // One success a task: less spread than independent episodes would show; capped at the episodes.
  assert.equal(effectiveEpisodes(tasks([1], 100)), 200);
  assert.equal(effectiveEpisodes(tasks([0], 10)), 20, 'a rate of 0: nothing to correct');
  assert.equal(effectiveEpisodes([{ successes: 1, episodes: 4 }]), 4, 'one task: no between-task variance to estimate');
  const together = compareRates({ successes: 40, episodes: 200, tasks: tasks([0, 0, 0, 0, 2], 20) }, { successes: 80, episodes: 200, tasks: tasks([0, 0, 0, 2, 2], 20) });
  const apart = compareRates({ successes: 40, episodes: 200 }, { successes: 80, episodes: 200 });
  assert.equal(together.ratio, apart.ratio);
  assert.ok(together.before.effectiveEpisodes < 101 && together.after.effectiveEpisodes < 101);
  assert.ok(together.difference.interval.low < apart.difference.interval.low, 'a wider interval');
});

test('compareMeans pairs the tasks: a shift every task shares is significant even when the tasks differ widely', () => {
  const before = { a: [0.1, 0.1], b: [0.5, 0.5], c: [0.9, 0.7], d: [0.2, 0.4] };
  const after = { a: [0.3, 0.3], b: [0.7, 0.7], c: [1, 1], d: [0.5, 0.5] };
  const m = compareMeans(before, after);
  assert.equal(m.before.units, 4);
  assert.ok(Math.abs(m.before.mean - 0.425) < 1e-12 && Math.abs(m.after.mean - 0.625) < 1e-12);
  // Unpaired, the sides' intervals overlap; paired, every task gained 0.2-0.25.
  assert.ok(m.before.interval.high > m.after.interval.low);
  assert.ok(m.difference.interval.low > 0.15 && m.difference.interval.high < 0.26, JSON.stringify(m.difference));
  assert.equal(m.verdict, 'improved');
  assert.ok(Math.abs(m.ratio! - 0.625 / 0.425) < 1e-12);
  assert.equal(compareMeans(after, before).verdict, 'worse');
  assert.equal(compareMeans(before, before).verdict, 'within noise');
  assert.equal(compareMeans({ a: [0] }, { a: [0] }).ratio, null);
});
