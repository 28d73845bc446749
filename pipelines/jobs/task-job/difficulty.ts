import { createHash } from 'node:crypto';
import type { AnalyticsCatalog } from '../../../connectors/analytics/index.js';
import { ConfigError } from '../../../schemas/index.js';

/** Rollouts of one task seen in the analytics store. */
export interface Observed {
  readonly samples: number;
  /** Rewards at or above the pass reward. */
  readonly passes: number;
}

/**
 * Pass counts per task id from the rewards table: every reward the loop landed, except re-scored copies
 * (`trialrun verify rescore` writes those for comparison; counting them would count a rollout twice).
 */
export async function observedPassRates(catalog: AnalyticsCatalog, passReward: number): Promise<Map<string, Observed>> {
  if (!Number.isFinite(passReward)) throw new Error(`passReward must be a number, got ${passReward}`);
  const columns = new Set((await catalog.query(`SELECT column_name FROM (DESCRIBE rewards)`)).rows.map(([name]) => String(name)));
  const original = columns.has('rescore_id') ? 'AND rescore_id IS NULL' : '';
  const result = await catalog.query(
    `SELECT task_id, count(*) AS samples, count(*) FILTER (WHERE reward >= ${passReward}) AS passes
     FROM rewards WHERE task_id IS NOT NULL ${original} GROUP BY task_id`,
  );
  const observed = new Map<string, Observed>();
  for (const [taskId, samples, passes] of result.rows) observed.set(String(taskId), { samples: Number(samples), passes: Number(passes) });
  return observed;
}

export interface Bucket {
  readonly name: string;
  readonly maxDifficulty: number;
}

export interface CurriculumOptions {
  /** Pseudo-samples the cold-start estimate is worth in the Beta prior. @default 4 */
  priorStrength?: number;
  /** Cold start when nothing at all is observed. @default 0.5 */
  defaultPassRate?: number;
  /** Samples a tag needs before its pass rate is the cold start of its tasks. @default 20 */
  minTagSamples?: number;
  /** By increasing maxDifficulty, the last reaching 1. */
  buckets: readonly Bucket[];
  /** Share of each bucket in the published set. @default publish every task */
  mix?: Readonly<Record<string, number>>;
  /** Tasks to publish at most. @default as many as the mix allows */
  total?: number;
  /** Parking of tasks without learning signal. @default { minSamples: 8, low: 0.05, high: 0.95 } */
  park?: { readonly minSamples: number; readonly low: number; readonly high: number };
}

/** What to know about one task to place it. */
export interface CurriculumTask {
  readonly id: string;
  /** Tasks sharing a tag (the mutation kind) share a cold start. @default no tag */
  readonly tag?: string;
  readonly priority: number;
}

export interface Estimate {
  readonly samples: number;
  readonly passes: number;
  /** Cold-start pass rate the prior is centred on, and where it came from. */
  readonly prior: number;
  readonly priorFrom: 'tag' | 'all tasks' | 'default';
  /** Posterior mean pass rate: (passes + s*prior) / (samples + s). */
  readonly passRate: number;
  /** 1 - passRate. */
  readonly difficulty: number;
  readonly bucket: string;
  /** Why the task is parked (no learning signal), if it is. */
  readonly parked: string | null;
}

export interface BucketCounts {
  readonly bucket: string;
  /** Tasks in the bucket, parked ones excluded. */
  readonly available: number;
  readonly selected: number;
  readonly parked: number;
}

export interface Curriculum {
  readonly estimates: Estimate[];
  /** Indexes of the tasks to publish, in input order. */
  readonly selected: number[];
  /** Indexes left out by the mix (they stay for a later run), with the reason. */
  readonly deferred: Array<{ index: number; reason: string }>;
  readonly histogram: BucketCounts[];
  /** Tasks with no observation: their estimate is the cold start alone. */
  readonly coldStart: number;
}

/**
 * The tasks to plan, by index: an array, or anything that hands out a task at an index (a job's spilled
 * rows), so millions of tasks need not be held as objects at once.
 */
export interface CurriculumTasks {
  readonly length: number;
  at(index: number): CurriculumTask | undefined;
}

const clampPrior = (rate: number): number => Math.min(0.99, Math.max(0.01, rate));
const stableRank = (id: string): string => createHash('sha256').update(id).digest('hex').slice(0, 12);

/**
 * Difficulty from observed pass rates smoothed by a Beta prior, so two failures do not make a task
 * impossible; the prior's centre is the cold-start estimate: the pass rate of the task's tag (mutation
 * kind) once that has enough samples, else of every observed task, else a default. Tasks with enough
 * samples and a raw pass rate near 0 or 1 are parked; the rest fill difficulty buckets, and the target mix
 * picks how many of each bucket are published (highest priority first, then a stable pseudo-random order).
 */
export function planCurriculum(tasks: CurriculumTasks, observed: ReadonlyMap<string, Observed>, options: CurriculumOptions): Curriculum {
  const strength = options.priorStrength ?? 4;
  const defaultRate = options.defaultPassRate ?? 0.5;
  const minTagSamples = options.minTagSamples ?? 20;
  const park = options.park ?? { minSamples: 8, low: 0.05, high: 0.95 };
  const buckets = options.buckets;
  if (buckets.length === 0 || buckets.at(-1)!.maxDifficulty !== 1) throw new ConfigError('CurriculumOptions.buckets: the last bucket must reach difficulty 1');

  let allSamples = 0;
  let allPasses = 0;
  for (const { samples, passes } of observed.values()) {
    allSamples += samples;
    allPasses += passes;
  }
  const task = (index: number): CurriculumTask => tasks.at(index)!;
  const byTag = new Map<string, { samples: number; passes: number }>();
  for (let index = 0; index < tasks.length; index++) {
    const { id, tag } = task(index);
    const seen = observed.get(id);
    if (!seen || tag === undefined) continue;
    const total = byTag.get(tag) ?? { samples: 0, passes: 0 };
    byTag.set(tag, { samples: total.samples + seen.samples, passes: total.passes + seen.passes });
  }

  let coldStart = 0;
  const NEVER_SEEN = { samples: 0, passes: 0 };
  // Tasks with the same observations and prior have the same estimate: one object each, not one per task
  // (a job of millions of rows is mostly unobserved tasks of a few tags).
  const shared = new Map<string, Estimate>();
  const estimates: Estimate[] = new Array<Estimate>(tasks.length);
  for (let index = 0; index < tasks.length; index++) {
    const { id, tag: tagName } = task(index);
    const seen = observed.get(id) ?? NEVER_SEEN;
    if (seen.samples === 0) coldStart++;
    const tag = tagName === undefined ? undefined : byTag.get(tagName);
    const [prior, priorFrom] =
      tag && tag.samples >= minTagSamples
        ? [clampPrior(tag.passes / tag.samples), 'tag' as const]
        : allSamples >= minTagSamples
          ? [clampPrior(allPasses / allSamples), 'all tasks' as const]
          : [defaultRate, 'default' as const];
    const key = `${seen.samples}/${seen.passes}/${priorFrom}/${prior}`;
    let estimate = shared.get(key);
    if (!estimate) {
      const passRate = (seen.passes + strength * prior) / (seen.samples + strength);
      const difficulty = 1 - passRate;
      const bucket = buckets.find((b) => difficulty <= b.maxDifficulty + 1e-12)!.name;
      let parked: string | null = null;
      if (seen.samples >= park.minSamples) {
        const raw = seen.passes / seen.samples;
        if (raw <= park.low) parked = `passed ${fmt(seen.passes)} of ${seen.samples} rollouts (rate ${raw.toFixed(2)} <= park.low ${park.low}): no learning signal`;
        else if (raw >= park.high) parked = `passed ${fmt(seen.passes)} of ${seen.samples} rollouts (rate ${raw.toFixed(2)} >= park.high ${park.high}): no learning signal`;
      }
      estimate = { samples: seen.samples, passes: seen.passes, prior, priorFrom, passRate, difficulty, bucket, parked };
      shared.set(key, estimate);
    }
    estimates[index] = estimate;
  }

  const members = new Map<string, number[]>(buckets.map((b) => [b.name, []]));
  estimates.forEach((estimate, index) => {
    if (!estimate.parked) members.get(estimate.bucket)!.push(index);
  });
  // One flag a task, not a set of millions of numbers.
  const isSelected = new Uint8Array(tasks.length);
  const deferred: Array<{ index: number; reason: string }> = [];
  if (!options.mix) {
    for (const indexes of members.values()) for (const index of indexes) isSelected[index] = 1;
  } else {
    const mix = options.mix;
    // The largest total every bucket can fill its share of, capped by options.total.
    let total = options.total ?? Infinity;
    for (const [name, share] of Object.entries(mix)) if (share > 0) total = Math.min(total, Math.floor((members.get(name)?.length ?? 0) / share));
    if (!Number.isFinite(total)) total = 0;
    for (const [name, indexes] of members) {
      const want = Math.min(indexes.length, Math.round((mix[name] ?? 0) * total));
      const rank = new Map(indexes.map((index) => [index, stableRank(task(index).id)]));
      const priority = new Map(indexes.map((index) => [index, task(index).priority]));
      const ranked = [...indexes].sort((a, b) => priority.get(b)! - priority.get(a)! || (rank.get(a)! < rank.get(b)! ? -1 : rank.get(a)! > rank.get(b)! ? 1 : 0));
      ranked.forEach((index, position) => {
        if (position < want) isSelected[index] = 1;
        else deferred.push({ index, reason: `left out by the target mix: bucket ${name} gets ${want} of ${indexes.length} (share ${mix[name] ?? 0} of ${total})` });
      });
    }
  }
  const parkedIn = new Map<string, number>();
  for (const estimate of estimates) if (estimate.parked) parkedIn.set(estimate.bucket, (parkedIn.get(estimate.bucket) ?? 0) + 1);
  const histogram = buckets.map((b): BucketCounts => ({
    bucket: b.name,
    available: members.get(b.name)!.length,
    selected: members.get(b.name)!.reduce((count, index) => count + isSelected[index]!, 0),
    parked: parkedIn.get(b.name) ?? 0,
  }));
  const selected: number[] = [];
  for (let index = 0; index < tasks.length; index++) if (isSelected[index]) selected.push(index);
  return { estimates, selected, deferred, histogram, coldStart };
}

const fmt = (value: number): string => (Number.isInteger(value) ? String(value) : value.toFixed(1));
