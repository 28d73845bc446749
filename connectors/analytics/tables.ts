import { llmTrainingSamples, type PolicyCheckpoint, type Reward, type Task, type TopicKey, type Trajectory, type Verification } from '../../schemas/index.js';

/** `int32` is for token ids and the like: half the bytes of `int64` before compression. */
export type ScalarType = 'utf8' | 'int64' | 'int32' | 'float64' | 'bool' | 'timestamp';

/** A struct field: a scalar, or a list of scalars (a sample's token ids). */
export interface StructField {
  readonly name: string;
  readonly type: ScalarType | { readonly listOf: ScalarType };
}

/**
 * A column's type: a scalar, or a list of scalars (`tags`) or of structs (`steps`). Lists are real
 * Parquet lists, so DuckDB unnests and indexes them natively (`unnest(steps)`, `steps[1].tool`).
 */
export type ColumnType = ScalarType | { readonly listOf: ScalarType | readonly StructField[] };

export type ScalarValue = string | number | bigint | boolean | null;
export type StructValue = Readonly<Record<string, ScalarValue | readonly ScalarValue[]>>;
export type CellValue = ScalarValue | readonly ScalarValue[] | ReadonlyArray<StructValue>;

/**
 * A column DuckDB computes, in SQL, from each record as its JSON reader parsed it: `r` is the record, typed
 * by its contract (see duckdbRecordType), and `m` where it came from (`m.topic`, `m.partition`,
 * `m."offset"`). The result is cast to the column's type.
 */
export interface SqlColumn {
  readonly name: string;
  readonly type: ColumnType;
  readonly sql: string;
}

/**
 * A column computed in JavaScript from the record as zod returns it, where SQL would have to repeat a
 * function of the contract's own (`llmTrainingSamples`). zod runs only for records that `needs` says need
 * it; for the rest the column is the SQL value `otherwise` (null when not given).
 */
export interface DerivedColumn<R> {
  readonly name: string;
  readonly type: ColumnType;
  readonly value: (record: R) => CellValue;
  readonly needs: (input: unknown) => boolean;
  readonly otherwise?: string;
}

export type Column<R> = SqlColumn | DerivedColumn<R>;

export const isDerived = <R>(column: Column<R>): column is DerivedColumn<R> => 'value' in column;

/** One analytics table: which topic feeds it and how a record becomes a row. */
export interface TableSpec<R> {
  readonly table: string;
  readonly topic: TopicKey;
  readonly columns: readonly Column<R>[];
}

/** Kafka coordinates of the row's source record: they make the sink idempotent and every row traceable. */
export interface SourceMeta {
  /** Physical topic name (with its prefix). */
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export type Row<R> = { record: R; meta: SourceMeta };

const sql = (name: string, type: ColumnType, expression: string): SqlColumn => ({ name, type, sql: expression });
/** A time in the record (ISO text, UTC, as the contract requires) at the TIMESTAMP columns' millisecond precision. */
const time = (expression: string): string => `date_trunc('millisecond', CAST(${expression} AS TIMESTAMP))`;
/** A list of structs, built field by field in the declared order. */
const structs = (list: string, item: string, fields: readonly StructField[], values: Readonly<Record<string, string>>): string =>
  `list_transform(${list}, ${item} -> {${fields.map((field) => `'${field.name}': ${values[field.name]}`).join(', ')}})`;

const LINEAGE_COLUMNS: readonly SqlColumn[] = [
  sql('task_id', 'utf8', 'r.lineage.taskId'),
  sql('attempt', 'int64', 'r.lineage.attempt'),
  sql('run_id', 'utf8', 'r.lineage.runId'),
  sql('policy_version', 'int64', 'r.lineage.policyVersion'),
  sql('sandbox_image_digest', 'utf8', 'r.lineage.sandboxImageDigest'),
  sql('verifier_version', 'utf8', 'r.lineage.verifierVersion'),
  sql('created_at', 'timestamp', time('r.lineage.createdAt')),
  sql('_topic', 'utf8', 'm.topic'),
  sql('_partition', 'int64', 'm.partition'),
  sql('_offset', 'int64', 'm."offset"'),
];

/** One struct per step; the candidates' feature vectors stay on the topic (the learner's input), only their count lands here. */
export const STEP_FIELDS: readonly StructField[] = [
  { name: 'index', type: 'int64' },
  { name: 'started_at', type: 'timestamp' },
  { name: 'tool', type: 'utf8' },
  { name: 'arguments', type: 'utf8' },
  { name: 'ok', type: 'bool' },
  { name: 'exit_code', type: 'int64' },
  { name: 'truncated', type: 'bool' },
  { name: 'output', type: 'utf8' },
  { name: 'observation', type: 'utf8' },
  { name: 'duration_ms', type: 'float64' },
  { name: 'sandbox_ms', type: 'float64' },
  { name: 'chosen', type: 'int64' },
  { name: 'logprob', type: 'float64' },
  { name: 'candidates', type: 'int64' },
];

/**
 * One struct per model turn (`Step.llm`), for latency, token and finish-reason analyses; the token ids
 * themselves are in `llm_samples`, once.
 */
export const LLM_TURN_FIELDS: readonly StructField[] = [
  { name: 'step_index', type: 'int64' },
  { name: 'tool', type: 'utf8' },
  { name: 'ok', type: 'bool' },
  { name: 'model', type: 'utf8' },
  { name: 'tokenizer', type: 'utf8' },
  { name: 'chat_template_sha256', type: 'utf8' },
  { name: 'policy_version', type: 'int64' },
  { name: 'finish_reason', type: 'utf8' },
  { name: 'prompt_tokens', type: 'int64' },
  { name: 'appended_prompt_tokens', type: 'int64' },
  { name: 'completion_tokens', type: 'int64' },
  { name: 'extends_previous', type: 'bool' },
  { name: 'latency_ms', type: 'float64' },
  { name: 'attempts', type: 'int64' },
  { name: 'constrained', type: 'bool' },
  { name: 'invalid_reply', type: 'utf8' },
  { name: 'temperature', type: 'float64' },
  { name: 'top_p', type: 'float64' },
  { name: 'max_tokens', type: 'int64' },
  { name: 'seed', type: 'int64' },
];

/** One struct per training sample of the episode (`llmTrainingSamples`), token arrays as Parquet lists. */
export const LLM_SAMPLE_FIELDS: readonly StructField[] = [
  { name: 'sample_index', type: 'int64' },
  { name: 'prompt_ids', type: { listOf: 'int32' } },
  { name: 'completion_ids', type: { listOf: 'int32' } },
  { name: 'completion_mask', type: { listOf: 'int32' } },
  { name: 'completion_logprobs', type: { listOf: 'float64' } },
  { name: 'completion_policy_versions', type: { listOf: 'int32' } },
  { name: 'turn_policy_versions', type: { listOf: 'int32' } },
  { name: 'step_indices', type: { listOf: 'int32' } },
  { name: 'is_truncated', type: 'bool' },
];

const STEP_VALUES: Readonly<Record<string, string>> = {
  index: 's.index',
  started_at: time('s.startedAt'),
  tool: 's.toolCall.name',
  arguments: 'CAST(s.toolCall.arguments AS VARCHAR)',
  ok: 's.toolResult.ok',
  exit_code: 's.toolResult.exitCode',
  truncated: 's.toolResult.truncated',
  output: 's.toolResult.output',
  observation: 's.observation',
  duration_ms: 's.durationMs',
  sandbox_ms: 's.sandboxMs',
  chosen: 's.decision.chosen',
  logprob: 's.decision.logprob',
  candidates: 'len(s.decision.features)',
};

const LLM_TURN_VALUES: Readonly<Record<string, string>> = {
  step_index: 's.index',
  tool: 's.toolCall.name',
  ok: 's.toolResult.ok',
  model: 's.llm.model',
  tokenizer: 's.llm.tokenizer',
  chat_template_sha256: 's.llm.chatTemplateSha256',
  policy_version: 's.llm.policyVersion',
  finish_reason: 's.llm.finishReason',
  prompt_tokens: 'coalesce(s.llm.tokens.promptLength, s.llm.promptTokens)',
  appended_prompt_tokens: 'len(s.llm.tokens.appendedPromptIds)',
  completion_tokens: 'coalesce(len(s.llm.tokens.completionIds), s.llm.completionTokens)',
  extends_previous: 's.llm.tokens.extendsPrevious',
  latency_ms: 's.llm.latencyMs',
  attempts: 's.llm.attempts',
  // Absent from records written before it existed, as zod's default has it.
  constrained: 'coalesce(s.llm.constrained, false)',
  invalid_reply: 's.llm.invalidReply',
  temperature: 's.llm.sampling.temperature',
  top_p: 's.llm.sampling.topP',
  max_tokens: 's.llm.sampling.maxTokens',
  seed: 's.llm.sampling.seed',
};

/** Whether any step of a trajectory (as read) has token ids: only those episodes have training samples. */
const hasTokens = (input: unknown): boolean => (input as { steps?: Array<{ llm?: { tokens?: unknown } | null }> }).steps?.some((step) => step.llm?.tokens) ?? false;

export const TRAJECTORIES: TableSpec<Trajectory> = {
  table: 'trajectories',
  topic: 'trajectories',
  columns: [
    sql('trajectory_id', 'utf8', 'r.trajectoryId'),
    sql('group_id', 'utf8', 'r.groupId'),
    sql('group_size', 'int64', 'r.groupSize'),
    sql('env_id', 'utf8', 'r.envId'),
    sql('policy_id', 'utf8', 'r.policyId'),
    sql('outcome', 'utf8', 'r.outcome'),
    sql('error', 'utf8', 'r.error'),
    sql('num_steps', 'int64', 'len(r.steps)'),
    sql('num_decisions', 'int64', 'len(list_filter(r.steps, s -> s.decision IS NOT NULL))'),
    sql('total_ms', 'float64', 'r.totalMs'),
    sql('sandbox_ms', 'float64', 'r.sandboxMs'),
    sql('steps', { listOf: STEP_FIELDS }, structs('r.steps', 's', STEP_FIELDS, STEP_VALUES)),
    sql('llm_turns', { listOf: LLM_TURN_FIELDS }, structs('list_filter(r.steps, s -> s.llm IS NOT NULL)', 's', LLM_TURN_FIELDS, LLM_TURN_VALUES)),
    {
      name: 'llm_samples',
      type: { listOf: LLM_SAMPLE_FIELDS },
      needs: hasTokens,
      otherwise: '[]',
      value: (r) =>
        llmTrainingSamples(r.steps).map((sample) => ({
          sample_index: sample.sampleIndex,
          prompt_ids: sample.promptIds,
          completion_ids: sample.completionIds,
          completion_mask: sample.completionMask,
          completion_logprobs: sample.completionLogprobs,
          completion_policy_versions: sample.completionPolicyVersions,
          turn_policy_versions: sample.turnPolicyVersions,
          step_indices: sample.stepIndices,
          is_truncated: sample.truncated,
        })),
    },
    ...LINEAGE_COLUMNS,
  ],
};

const TEST_FIELDS: readonly StructField[] = [
  { name: 'id', type: 'utf8' },
  { name: 'outcome', type: 'utf8' },
  { name: 'duration_ms', type: 'float64' },
  { name: 'message', type: 'utf8' },
];
const HACK_FIELDS: readonly StructField[] = [
  { name: 'kind', type: 'utf8' },
  { name: 'evidence', type: 'utf8' },
  { name: 'path', type: 'utf8' },
  { name: 'line', type: 'int64' },
  { name: 'source', type: 'utf8' },
];

export const VERIFICATIONS: TableSpec<Verification> = {
  table: 'verifications',
  topic: 'verifications',
  columns: [
    sql('verification_id', 'utf8', 'r.verificationId'),
    sql('trajectory_id', 'utf8', 'r.trajectoryId'),
    sql('group_id', 'utf8', 'r.groupId'),
    sql('passed', 'bool', 'r.passed'),
    sql('tests_passed', 'int64', 'r.testsPassed'),
    sql('tests_total', 'int64', 'r.testsTotal'),
    sql('fraction_passed', 'float64', 'r.fractionPassed'),
    sql('failure', 'utf8', 'r.failure'),
    sql('failure_detail', 'utf8', 'r.failureDetail'),
    sql('duration_ms', 'float64', 'r.durationMs'),
    sql('tests', { listOf: TEST_FIELDS }, structs('r.tests', 't', TEST_FIELDS, { id: 't.id', outcome: 't.outcome', duration_ms: 't.durationMs', message: 't.message' })),
    sql('hacks', { listOf: HACK_FIELDS }, `coalesce(${structs('r.hacks', 'h', HACK_FIELDS, { kind: 'h.kind', evidence: 'h.evidence', path: 'h.path', line: 'h.line', source: 'h.source' })}, [])`),
    sql('quarantine_reason', 'utf8', 'r.quarantine.reason'),
    sql('rescore_id', 'utf8', 'r.rescoreId'),
    // The reward under the task's RewardSpec; records from before it existed scored passed ? 1 : 0.
    sql('score', 'float64', 'coalesce(r.score, CASE WHEN r.passed THEN 1 ELSE 0 END)'),
    sql('check_kind', 'utf8', "coalesce(r.checkKind, 'tests')"),
    ...LINEAGE_COLUMNS,
  ],
};

export const REWARDS: TableSpec<Reward> = {
  table: 'rewards',
  topic: 'rewards',
  columns: [
    sql('reward_id', 'utf8', 'r.rewardId'),
    sql('trajectory_id', 'utf8', 'r.trajectoryId'),
    sql('group_id', 'utf8', 'r.groupId'),
    sql('reward', 'float64', 'r.reward'),
    sql('advantage', 'float64', 'r.advantage'),
    sql('group_mean', 'float64', 'r.groupMean'),
    sql('group_std', 'float64', 'r.groupStd'),
    sql('group_size', 'int64', 'r.groupSize'),
    sql('fraction_passed', 'float64', 'r.fractionPassed'),
    sql('hacked', 'bool', 'coalesce(r.hacked, false)'),
    // Records from before dispositions existed all went to the learner.
    sql('disposition', 'utf8', "coalesce(r.disposition, 'learn')"),
    sql('reason', 'utf8', 'r.reason'),
    sql('rescore_id', 'utf8', 'r.rescoreId'),
    ...LINEAGE_COLUMNS,
  ],
};

export const CHECKPOINTS: TableSpec<PolicyCheckpoint> = {
  table: 'checkpoints',
  topic: 'policyCheckpoints',
  columns: [
    sql('policy_id', 'utf8', 'r.policyId'),
    sql('version', 'int64', 'r.version'),
    sql('parent_version', 'int64', 'r.parentVersion'),
    sql('sha256', 'utf8', 'r.sha256'),
    sql('samples', 'int64', 'r.metrics.samples'),
    sql('mean_reward', 'float64', 'r.metrics.meanReward'),
    sql('mean_abs_advantage', 'float64', 'r.metrics.meanAbsAdvantage'),
    sql('grad_norm', 'float64', 'r.metrics.gradNorm'),
    sql('stale_dropped', 'int64', 'r.metrics.staleDropped'),
    // Names may repeat, which a DuckDB map refuses; checkpoints are few.
    { name: 'weights', type: 'utf8', needs: () => true, value: (r) => JSON.stringify(Object.fromEntries(r.featureNames.map((name, i) => [name, r.weights[i]]))) },
    ...LINEAGE_COLUMNS,
  ],
};

/** Task metadata (never the files or hidden tests), so analyses can group outcomes by tag, difficulty or source. */
export const TASKS: TableSpec<Task> = {
  table: 'tasks',
  topic: 'tasks',
  columns: [
    sql('env_id', 'utf8', 'r.envId'),
    sql('title', 'utf8', 'r.title'),
    sql('tags', { listOf: 'utf8' }, 'r.tags'),
    sql('difficulty', 'float64', 'r.difficulty'),
    sql('priority', 'int64', 'r.priority'),
    sql('split', 'utf8', 'r.split'),
    sql('dataset', 'utf8', 'r.source.dataset'),
    sql('dataset_hash', 'utf8', 'r.source.datasetHash'),
    sql('source_row', 'int64', 'r.source.sourceRow'),
    sql('hidden_test_files', 'int64', 'len(json_keys(r.hiddenTests))'),
    ...LINEAGE_COLUMNS,
  ],
};

/** Every analytics table, by the topic that feeds it. */
export const ANALYTICS_TABLES = [TRAJECTORIES, VERIFICATIONS, REWARDS, CHECKPOINTS, TASKS] as const;
export type AnyTableSpec = TableSpec<never>;

export function tableForTopic(topic: TopicKey): TableSpec<unknown> | undefined {
  return ANALYTICS_TABLES.find((spec) => spec.topic === topic) as TableSpec<unknown> | undefined;
}

export const DUCKDB_TYPES: Record<ScalarType, string> = {
  utf8: 'VARCHAR',
  int64: 'BIGINT',
  int32: 'INTEGER',
  float64: 'DOUBLE',
  bool: 'BOOLEAN',
  timestamp: 'TIMESTAMP',
};

export function duckdbType(type: ColumnType): string {
  if (typeof type === 'string') return DUCKDB_TYPES[type];
  if (typeof type.listOf === 'string') return `${DUCKDB_TYPES[type.listOf]}[]`;
  return `STRUCT(${type.listOf.map((field) => `"${field.name}" ${typeof field.type === 'string' ? DUCKDB_TYPES[field.type] : `${DUCKDB_TYPES[field.type.listOf]}[]`}`).join(', ')})[]`;
}
