/**
 * The chaos run's verdict, one rule for both places it counts (Kafka, read_committed, and the Parquet lake in
 * DuckDB): every published task has exactly its G trajectories (one per attempt), every trajectory exactly one
 * verification and one reward, the checkpoints form one chain (each version from the one before, none twice),
 * and every dead letter is a poison record (it failed to decode or broke its contract), not a record the faults
 * broke.
 */

/** What one place holds, reduced to the ids the verdict reads. */
export interface ChaosRecords {
  /** One entry per trajectory record: its sample (task and attempt) and its id. */
  readonly trajectories: ReadonlyArray<{ readonly taskId: string; readonly attempt: number; readonly trajectoryId: string }>;
  readonly verifications: ReadonlyArray<{ readonly trajectoryId: string }>;
  /** `learn`: the reward goes to the learner (a group whose rewards all tie has no signal and does not). */
  readonly rewards: ReadonlyArray<{ readonly trajectoryId: string; readonly learn: boolean }>;
  /** A checkpoint without a parent (null) is a first version's: version 1 from the initial policy. */
  readonly checkpoints: ReadonlyArray<{ readonly version: number; readonly parentVersion: number | null }>;
  /** Absent where the place does not keep them (the lake has no dead-letter table). */
  readonly deadLetters?: ReadonlyArray<{ readonly stage: string }>;
}

/** One kind of record against what was expected of it. */
export interface KindCount {
  readonly expected: number;
  readonly records: number;
  /** Expected ids with no record. */
  readonly lost: number;
  /** Records beyond the first for an id (a redone record committed twice). */
  readonly duplicated: number;
  /** Records whose id was not expected (a sample of no published task, a verdict on no trajectory). */
  readonly unexpected: number;
}

export interface ChaosTally {
  readonly trajectories: KindCount;
  readonly verifications: KindCount;
  readonly rewards: KindCount;
  /** `expected`: one update per full batch of the rewards that go to the learner. */
  readonly checkpoints: { readonly expected: number; readonly records: number; readonly duplicated: number; readonly brokenLinks: number; readonly newest: number };
  readonly deadLetters: { readonly poison: number; readonly other: number } | null;
  /** Every count exact: nothing lost, duplicated or unexpected, one checkpoint chain, no dead letter but poison. */
  readonly exact: boolean;
}

/** The stages at which a record is poison: it could not be decoded, or it broke its topic's contract. */
export const POISON_STAGES: ReadonlySet<string> = new Set(['decode', 'validate']);

function countIds(expected: ReadonlySet<string>, ids: readonly string[]): KindCount {
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  let lost = 0;
  for (const id of expected) if (!seen.has(id)) lost++;
  let duplicated = 0;
  let unexpected = 0;
  for (const [id, n] of seen) {
    if (!expected.has(id)) unexpected += n;
    else duplicated += n - 1;
  }
  return { expected: expected.size, records: ids.length, lost, duplicated, unexpected };
}

const sampleId = (taskId: string, attempt: number): string => `${taskId}#${attempt}`;

/**
 * Counts one place's records against the published tasks. Verifications and rewards are expected for the
 * trajectories found in the same place (a lost trajectory is counted once, as a trajectory).
 */
export function tallyChaos(published: { readonly taskIds: readonly string[]; readonly groupSize: number; readonly batchSize: number }, records: ChaosRecords): ChaosTally {
  const samples = new Set(published.taskIds.flatMap((taskId) => Array.from({ length: published.groupSize }, (_, attempt) => sampleId(taskId, attempt))));
  const trajectories = countIds(samples, records.trajectories.map((t) => sampleId(t.taskId, t.attempt)));
  const trajectoryIds = new Set(records.trajectories.map((t) => t.trajectoryId));
  const verifications = countIds(trajectoryIds, records.verifications.map((v) => v.trajectoryId));
  const rewards = countIds(trajectoryIds, records.rewards.map((r) => r.trajectoryId));

  const versions = new Map<number, number>();
  for (const c of records.checkpoints) versions.set(c.version, (versions.get(c.version) ?? 0) + 1);
  const newest = Math.max(0, ...versions.keys());
  // A chain: versions 1..newest all present, each made from the version before it.
  let brokenLinks = 0;
  for (let version = 1; version <= newest; version++) if (!versions.has(version)) brokenLinks++;
  for (const c of records.checkpoints) if ((c.parentVersion ?? 0) !== c.version - 1) brokenLinks++;
  const learnable = new Set(records.rewards.filter((r) => r.learn).map((r) => r.trajectoryId)).size;
  const checkpoints = { expected: Math.floor(learnable / published.batchSize), records: records.checkpoints.length, duplicated: records.checkpoints.length - versions.size, brokenLinks, newest };

  const deadLetters = records.deadLetters
    ? { poison: records.deadLetters.filter((d) => POISON_STAGES.has(d.stage)).length, other: records.deadLetters.filter((d) => !POISON_STAGES.has(d.stage)).length }
    : null;
  const exactKind = (k: KindCount): boolean => k.lost === 0 && k.duplicated === 0 && k.unexpected === 0;
  const exact =
    exactKind(trajectories) && exactKind(verifications) && exactKind(rewards) && checkpoints.records === checkpoints.expected && checkpoints.duplicated === 0 && checkpoints.brokenLinks === 0 && (deadLetters === null || deadLetters.other === 0);
  return { trajectories, verifications, rewards, checkpoints, deadLetters, exact };
}

/** One line per place: `trajectories 24 of 24 (lost 0, duplicated 0) ...`. */
export function formatTally(place: string, tally: ChaosTally): string {
  const kind = (name: string, k: KindCount): string => `${name} ${k.records} of ${k.expected} (lost ${k.lost}, duplicated ${k.duplicated}${k.unexpected ? `, unexpected ${k.unexpected}` : ''})`;
  const letters = tally.deadLetters ? `; dead letters: ${tally.deadLetters.poison} poison, ${tally.deadLetters.other} other` : '';
  const chain = `checkpoints ${tally.checkpoints.records} of ${tally.checkpoints.expected} (v1..v${tally.checkpoints.newest}, duplicated ${tally.checkpoints.duplicated}, broken links ${tally.checkpoints.brokenLinks})`;
  return `${place}: ${kind('trajectories', tally.trajectories)}; ${kind('verifications', tally.verifications)}; ${kind('rewards', tally.rewards)}; ${chain}${letters}; ${tally.exact ? 'exact' : 'NOT EXACT'}`;
}
