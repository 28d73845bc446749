import type { PolicyCheckpoint, Reward, TopicKey, Trajectory, Verification } from '../../schemas/index.js';

export type ColumnType = 'utf8' | 'int64' | 'float64' | 'bool' | 'timestamp';

export interface Column<R> {
  readonly name: string;
  readonly type: ColumnType;
  readonly value: (record: R) => string | number | bigint | boolean | null;
}

/** One analytics table: which topic feeds it and how a record becomes a row. */
export interface TableSpec<R> {
  readonly table: string;
  readonly topic: TopicKey;
  readonly columns: readonly Column<R>[];
}

/** Kafka coordinates of the row's source record: they make the sink idempotent and every row traceable. */
export interface SourceMeta {
  readonly partition: number;
  readonly offset: string;
}

type Row<R> = { record: R; meta: SourceMeta };

const col = <R>(name: string, type: ColumnType, value: (record: R) => string | number | bigint | boolean | null): Column<Row<R>> => ({
  name,
  type,
  value: (row) => value(row.record),
});

function lineageColumns<R extends { lineage: Trajectory['lineage'] }>(): Column<Row<R>>[] {
  return [
    col<R>('task_id', 'utf8', (r) => r.lineage.taskId),
    col<R>('attempt', 'int64', (r) => r.lineage.attempt),
    col<R>('run_id', 'utf8', (r) => r.lineage.runId),
    col<R>('policy_version', 'int64', (r) => r.lineage.policyVersion),
    col<R>('sandbox_image_digest', 'utf8', (r) => r.lineage.sandboxImageDigest),
    col<R>('verifier_version', 'utf8', (r) => r.lineage.verifierVersion),
    col<R>('created_at', 'timestamp', (r) => r.lineage.createdAt),
    { name: '_partition', type: 'int64', value: (row) => row.meta.partition },
    { name: '_offset', type: 'int64', value: (row) => BigInt(row.meta.offset) },
  ];
}

export const TRAJECTORIES: TableSpec<Row<Trajectory>> = {
  table: 'trajectories',
  topic: 'trajectories',
  columns: [
    col('trajectory_id', 'utf8', (r) => r.trajectoryId),
    col('group_id', 'utf8', (r) => r.groupId),
    col('group_size', 'int64', (r) => r.groupSize),
    col('env_id', 'utf8', (r) => r.envId),
    col('policy_id', 'utf8', (r) => r.policyId),
    col('outcome', 'utf8', (r) => r.outcome),
    col('error', 'utf8', (r) => r.error),
    col('num_steps', 'int64', (r) => r.steps.length),
    col('num_decisions', 'int64', (r) => r.steps.filter((s) => s.decision).length),
    col('total_ms', 'float64', (r) => r.totalMs),
    col('sandbox_ms', 'float64', (r) => r.sandboxMs),
    // Steps stay queryable as JSON (json_extract, unnest(from_json(...))) without a fixed nested schema.
    col('steps', 'utf8', (r) => JSON.stringify(r.steps.map(({ decision, ...step }) => ({ ...step, decision: decision && { chosen: decision.chosen, logprob: decision.logprob, candidates: decision.features.length } })))),
    ...lineageColumns<Trajectory>(),
  ],
};

export const VERIFICATIONS: TableSpec<Row<Verification>> = {
  table: 'verifications',
  topic: 'verifications',
  columns: [
    col('verification_id', 'utf8', (r) => r.verificationId),
    col('trajectory_id', 'utf8', (r) => r.trajectoryId),
    col('group_id', 'utf8', (r) => r.groupId),
    col('passed', 'bool', (r) => r.passed),
    col('tests_passed', 'int64', (r) => r.testsPassed),
    col('tests_total', 'int64', (r) => r.testsTotal),
    col('fraction_passed', 'float64', (r) => r.fractionPassed),
    col('failure', 'utf8', (r) => r.failure),
    col('duration_ms', 'float64', (r) => r.durationMs),
    col('tests', 'utf8', (r) => JSON.stringify(r.tests)),
    ...lineageColumns<Verification>(),
  ],
};

export const REWARDS: TableSpec<Row<Reward>> = {
  table: 'rewards',
  topic: 'rewards',
  columns: [
    col('reward_id', 'utf8', (r) => r.rewardId),
    col('trajectory_id', 'utf8', (r) => r.trajectoryId),
    col('group_id', 'utf8', (r) => r.groupId),
    col('reward', 'float64', (r) => r.reward),
    col('advantage', 'float64', (r) => r.advantage),
    col('group_mean', 'float64', (r) => r.groupMean),
    col('group_std', 'float64', (r) => r.groupStd),
    col('group_size', 'int64', (r) => r.groupSize),
    ...lineageColumns<Reward>(),
  ],
};

export const CHECKPOINTS: TableSpec<Row<PolicyCheckpoint>> = {
  table: 'checkpoints',
  topic: 'policyCheckpoints',
  columns: [
    col('policy_id', 'utf8', (r) => r.policyId),
    col('version', 'int64', (r) => r.version),
    col('parent_version', 'int64', (r) => r.parentVersion),
    col('sha256', 'utf8', (r) => r.sha256),
    col('samples', 'int64', (r) => r.metrics.samples),
    col('mean_reward', 'float64', (r) => r.metrics.meanReward),
    col('mean_abs_advantage', 'float64', (r) => r.metrics.meanAbsAdvantage),
    col('grad_norm', 'float64', (r) => r.metrics.gradNorm),
    col('stale_dropped', 'int64', (r) => r.metrics.staleDropped),
    col('weights', 'utf8', (r) => JSON.stringify(Object.fromEntries(r.featureNames.map((name, i) => [name, r.weights[i]])))),
    ...lineageColumns<PolicyCheckpoint>(),
  ],
};

/** Every analytics table, by the topic that feeds it. */
export const ANALYTICS_TABLES = [TRAJECTORIES, VERIFICATIONS, REWARDS, CHECKPOINTS] as const;
export type AnyTableSpec = TableSpec<Row<never>>;

export function tableForTopic(topic: TopicKey): TableSpec<Row<unknown>> | undefined {
  return ANALYTICS_TABLES.find((spec) => spec.topic === topic) as TableSpec<Row<unknown>> | undefined;
}

export const DUCKDB_TYPES: Record<ColumnType, string> = {
  utf8: 'VARCHAR',
  int64: 'BIGINT',
  float64: 'DOUBLE',
  bool: 'BOOLEAN',
  timestamp: 'TIMESTAMP',
};
