import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planCurriculum, type CurriculumTask, type Observed } from './difficulty.js';

const buckets = [
  { name: 'easy', maxDifficulty: 0.35 },
  { name: 'medium', maxDifficulty: 0.7 },
  { name: 'hard', maxDifficulty: 1 },
];
const task = (id: string, tag?: string, priority = 0): CurriculumTask => ({ id, tag, priority });

describe('planCurriculum', () => {
  it('does not call a task seen failing twice impossible', () => {
    const plan = planCurriculum([task('t')], new Map([['t', { samples: 2, passes: 0 }]]), { buckets });
    const estimate = plan.estimates[0]!;
    // Beta(2, 2) prior around the default 0.5: (0 + 2) / (2 + 4).
    assert.ok(Math.abs(estimate.passRate - 1 / 3) < 1e-9);
    assert.equal(estimate.bucket, 'medium');
    assert.equal(estimate.parked, null);
  });

  it('starts unseen tasks from their tag, then from every task, then from the default', () => {
    const observed = new Map<string, Observed>([
      ['a1', { samples: 30, passes: 27 }],
      ['b1', { samples: 10, passes: 1 }],
    ]);
    const plan = planCurriculum([task('a1', 'arith-op'), task('a2', 'arith-op'), task('b2', 'swap-args'), task('c1')], observed, { buckets, minTagSamples: 20 });
    assert.equal(plan.estimates[1]!.priorFrom, 'tag');
    assert.ok(Math.abs(plan.estimates[1]!.passRate - 0.9) < 1e-9);
    assert.equal(plan.estimates[1]!.bucket, 'easy');
    assert.equal(plan.estimates[2]!.priorFrom, 'all tasks');
    assert.ok(Math.abs(plan.estimates[2]!.prior - 28 / 40) < 1e-9);
    assert.equal(plan.coldStart, 3);
    assert.equal(planCurriculum([task('x')], new Map(), { buckets }).estimates[0]!.priorFrom, 'default');
  });

  it('parks tasks that always or never pass over enough samples', () => {
    const observed = new Map<string, Observed>([
      ['solved', { samples: 12, passes: 12 }],
      ['hopeless', { samples: 12, passes: 0 }],
      ['young', { samples: 3, passes: 0 }],
      ['useful', { samples: 12, passes: 6 }],
    ]);
    const plan = planCurriculum([task('solved'), task('hopeless'), task('young'), task('useful')], observed, { buckets, park: { minSamples: 8, low: 0.05, high: 0.95 } });
    assert.match(plan.estimates[0]!.parked!, /passed 12 of 12/);
    assert.match(plan.estimates[1]!.parked!, /passed 0 of 12/);
    assert.equal(plan.estimates[2]!.parked, null);
    assert.deepEqual(plan.selected, [2, 3]);
    assert.equal(plan.histogram.reduce((sum, b) => sum + b.parked, 0), 2);
  });

  it('fills the target mix from each bucket, highest priority first, and defers the rest', () => {
    const observed = new Map<string, Observed>();
    const tasks: CurriculumTask[] = [];
    for (let i = 0; i < 10; i++) {
      tasks.push(task(`easy-${i}`, undefined, i === 9 ? 5 : 0));
      observed.set(`easy-${i}`, { samples: 4, passes: 4 });
    }
    for (let i = 0; i < 3; i++) {
      tasks.push(task(`hard-${i}`));
      observed.set(`hard-${i}`, { samples: 7, passes: 0 });
    }
    const plan = planCurriculum(tasks, observed, { buckets, mix: { easy: 0.5, hard: 0.5 } });
    assert.deepEqual(Object.fromEntries(plan.histogram.map((b) => [b.bucket, [b.available, b.selected]])), { easy: [10, 3], medium: [0, 0], hard: [3, 3] });
    assert.ok(plan.selected.includes(9), 'the priority-5 easy task is picked first');
    assert.equal(plan.deferred.length, 7);
    assert.match(plan.deferred[0]!.reason, /target mix: bucket easy gets 3 of 10/);
    const capped = planCurriculum(tasks, observed, { buckets, mix: { easy: 0.5, hard: 0.5 }, total: 2 });
    assert.equal(capped.selected.length, 2);
  });
});
