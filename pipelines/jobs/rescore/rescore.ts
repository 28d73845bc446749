import { ArtifactIntegrityError } from '../../../connectors/checkpoints/index.js';
import { inTransaction, readRange, readTopic, rangeGroupId, type Position } from '../../../connectors/kafka/index.js';
import { BlobNotFoundError, ConfigError, DecodeError, errorMessage, NotFoundError, resolveRetryOptions, ValidationError, withRetries, type Reward, type RewardDisposition, type TopicValue, type Verification } from '../../../schemas/index.js';
import { groupKey, memberOf, resolveGroupScoring, scoreGroup, type GroupMember, type GroupScoringOptions } from '../../reward/index.js';
import type { ProcessorContext } from '../../runtime/index.js';
import type { Verifier } from '../../verifier/index.js';

// Transient sandbox failures are retried before a re-scoring gives up.
const RETRY = resolveRetryOptions({ retries: 6, initialDelayMs: 1000, maxDelayMs: 30_000 });

export interface RescoreOptions {
  /** Inclusive start of the trajectories to re-score (see `parsePosition`). */
  from: Position;
  /** Exclusive end. @default 'latest' */
  to?: Position;
  /** The verifier version the caller expects this build to have; a mismatch stops before anything is read. @default none (no check) */
  expectVersion?: string;
  /** How re-scored groups are rewarded (the range's end stands in for the straggler deadline). @default resolveGroupScoring() */
  scoring?: GroupScoringOptions;
  /** Called after each re-scored trajectory. @default none */
  onProgress?: (progress: RescoreProgress) => void;
  /** @default none */
  signal?: AbortSignal;
}

export interface RescoreProgress {
  readonly read: number;
  readonly total: number;
  readonly verified: number;
  readonly skipped: number;
}

export interface RescoreReport {
  /** Marks every verification and reward this re-scoring wrote; the same range and version give the same id. */
  readonly rescoreId: string;
  readonly verifierVersion: string;
  readonly trajectoriesRead: number;
  readonly verificationsWritten: number;
  /** Trajectories that could not be re-scored (undecodable, or their task is unknown), with why. */
  readonly skipped: ReadonlyArray<{ readonly offset: string; readonly partition: number; readonly reason: string }>;
  readonly rewardsWritten: number;
  /** Rewards an earlier run of the same re-scoring had already written. */
  readonly rewardsAlreadyWritten: number;
  readonly dispositions: Readonly<Record<RewardDisposition, number>>;
  readonly elapsedMs: number;
}

/**
 * Re-reads stored trajectories in a range and verifies them again with this build's verifier, writing
 * new verifications and rewards marked with a re-scoring id under the new verifier version; the old
 * records stay as they were, so two versions compare side by side in SQL. Re-running the same range
 * resumes where it stopped (the range read commits its progress) and writes no reward twice. Re-scored
 * rewards never reach the learner.
 */
export async function rescore(context: ProcessorContext, verifier: Verifier, options: RescoreOptions): Promise<RescoreReport> {
  const started = performance.now();
  const scoring = resolveGroupScoring(options.scoring);
  const version = await verifier.version();
  if (options.expectVersion !== undefined && options.expectVersion !== version) {
    throw new ConfigError(`--verifier ${options.expectVersion} is not the verifier this build runs (${version} with timeout ${verifier.options.timeoutMs} ms, ${verifier.options.referenceRuns} reference runs); build the verifier you want, or pass its version`);
  }
  const { kafka, serde, names } = context;
  const to = options.to ?? 'latest';
  const topic = names.name('trajectories');
  const readGroup = rangeGroupId(topic, options.from, to, `rescore:${version}`);
  const rescoreId = `rescore-${readGroup.slice(-12)}`;
  const signal = options.signal ?? new AbortController().signal;

  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  let read = 0;
  let verified = 0;
  const skipped: Array<{ offset: string; partition: number; reason: string }> = [];
  let total = 0;
  try {
    const range = await readRange(kafka, {
      topic,
      from: options.from,
      to,
      groupId: readGroup,
      signal,
      // The read reports the records in range before its first batch and after each one, so the count
      // is never "1 of 0" and ends equal to what was read.
      onProgress: (_, inRange) => {
        total = inRange;
        options.onProgress?.({ read, total, verified, skipped: skipped.length });
      },
      onRecord: async (record) => {
        read++;
        if (record.value === null) return;
        let verification: Verification;
        try {
          const trajectory = await serde.decode('trajectories', record.value);
          verification = await withRetries(() => verifier.verify(trajectory, signal, rescoreId), RETRY, signal);
        } catch (error) {
          // A record the live pipeline dead-lettered, one whose task is gone, or one whose claim-checked tree
          // is missing from (or corrupt in) the artifact store, is reported, not fatal;
          // sandbox and broker failures that outlast the retries stop the run, which resumes here when
          // started again.
          if (error instanceof NotFoundError || error instanceof DecodeError || error instanceof ValidationError || error instanceof ArtifactIntegrityError || error instanceof BlobNotFoundError) {
            skipped.push({ offset: record.offset, partition: record.partition, reason: errorMessage(error).slice(0, 300) });
            return;
          }
          throw error;
        }
        await producer.send({ topic: names.name('verifications'), messages: [{ key: verification.groupId, value: await serde.encode('verifications', verification) }] });
        verified++;
        options.onProgress?.({ read, total, verified, skipped: skipped.length });
      },
    });
    total = range.total;
  } finally {
    await producer.disconnect();
  }

  const rewards = await rewardRescored(context, rescoreId, scoring);
  return {
    rescoreId,
    verifierVersion: version,
    trajectoriesRead: read,
    verificationsWritten: verified,
    skipped,
    ...rewards,
    elapsedMs: performance.now() - started,
  };
}

/**
 * Rewards every group of a re-scoring's verifications (read back from the topic, so verifications from
 * an interrupted earlier run count too), skipping trajectories already rewarded, in one transaction.
 */
async function rewardRescored(
  context: ProcessorContext,
  rescoreId: string,
  scoring: ReturnType<typeof resolveGroupScoring>,
): Promise<Pick<RescoreReport, 'rewardsWritten' | 'rewardsAlreadyWritten' | 'dispositions'>> {
  const { kafka, serde, names } = context;
  const groups = new Map<string, Map<string, GroupMember>>();
  await scanRescored(context, 'verifications', rescoreId, (verification) => {
    const member = memberOf(verification);
    const members = groups.get(groupKey(member)) ?? new Map<string, GroupMember>();
    members.set(member.trajectoryId, member);
    groups.set(groupKey(member), members);
  });
  const rewarded = new Set<string>();
  await scanRescored(context, 'rewards', rescoreId, (reward) => void rewarded.add(reward.trajectoryId));

  const fresh: Reward[] = [];
  let already = 0;
  const dispositions: Record<RewardDisposition, number> = { learn: 0, 'no-signal': 0, withheld: 0, late: 0 };
  for (const members of groups.values()) {
    const list = [...members.values()];
    const expected = list[0]!.groupSize;
    const rewards = scoreGroup(list, list.length >= expected ? { by: 'complete' } : { by: 'end-of-range', expected }, scoring);
    for (const reward of rewards) {
      dispositions[reward.disposition ?? 'learn']++;
      if (rewarded.has(reward.trajectoryId)) already++;
      else fresh.push(reward);
    }
  }
  if (fresh.length > 0) {
    const messages = await Promise.all(fresh.map(async (reward) => ({ key: reward.trajectoryId, value: await serde.encode('rewards', reward) })));
    await inTransaction(kafka, `${names.prefix}${rescoreId}`, (transaction) => transaction.send({ topic: names.name('rewards'), messages }));
  }
  return { rewardsWritten: fresh.length, rewardsAlreadyWritten: already, dispositions };
}

/** Every decodable record of a topic written by one re-scoring run. */
async function scanRescored<K extends 'verifications' | 'rewards'>(context: ProcessorContext, key: K, rescoreId: string, use: (value: TopicValue<K>) => void): Promise<void> {
  await readTopic(context.kafka, {
    topic: context.names.name(key),
    catchUpTimeoutMs: 300_000,
    onRecord: async ({ value }) => {
      const decoded = value === null ? null : await context.serde.decode(key, value).catch(() => null);
      if (decoded !== null && decoded.rescoreId === rescoreId) use(decoded);
    },
  });
}
