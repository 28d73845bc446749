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

export interface Column<R> {
  readonly name: string;
  readonly type: ColumnType;
  readonly value: (record: R) => CellValue;
}

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

const col = <R>(name: string, type: ColumnType, value: (record: R) => CellValue): Column<Row<R>> => ({
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
    { name: '_topic', type: 'utf8', value: (row) => row.meta.topic },
    { name: '_partition', type: 'int64', value: (row) => row.meta.partition },
    { name: '_offset', type: 'int64', value: (row) => BigInt(row.meta.offset) },
  ];
}

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
    col('steps', { listOf: STEP_FIELDS }, (r) =>
      r.steps.map((s) => ({
        index: s.index,
        started_at: s.startedAt,
        tool: s.toolCall.name,
        arguments: JSON.stringify(s.toolCall.arguments),
        ok: s.toolResult.ok,
        exit_code: s.toolResult.exitCode,
        truncated: s.toolResult.truncated,
        output: s.toolResult.output,
        observation: s.observation,
        duration_ms: s.durationMs,
        sandbox_ms: s.sandboxMs,
        chosen: s.decision?.chosen ?? null,
        logprob: s.decision?.logprob ?? null,
        candidates: s.decision?.features.length ?? null,
      })),
    ),
    col('llm_turns', { listOf: LLM_TURN_FIELDS }, (r) =>
      r.steps.flatMap(({ index, toolCall, toolResult, llm }) =>
        llm
          ? [
              {
                step_index: index,
                tool: toolCall.name,
                ok: toolResult.ok,
                model: llm.model,
                tokenizer: llm.tokenizer,
                chat_template_sha256: llm.chatTemplateSha256,
                policy_version: llm.policyVersion,
                finish_reason: llm.finishReason,
                prompt_tokens: llm.tokens?.promptLength ?? llm.promptTokens,
                appended_prompt_tokens: llm.tokens?.appendedPromptIds.length ?? null,
                completion_tokens: llm.tokens?.completionIds.length ?? llm.completionTokens,
                extends_previous: llm.tokens?.extendsPrevious ?? null,
                latency_ms: llm.latencyMs,
                attempts: llm.attempts,
                constrained: llm.constrained,
                invalid_reply: llm.invalidReply,
                temperature: llm.sampling?.temperature ?? null,
                top_p: llm.sampling?.topP ?? null,
                max_tokens: llm.sampling?.maxTokens ?? null,
                seed: llm.sampling?.seed ?? null,
              },
            ]
          : [],
      ),
    ),
    col('llm_samples', { listOf: LLM_SAMPLE_FIELDS }, (r) =>
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
    ),
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
    col('failure_detail', 'utf8', (r) => r.failureDetail ?? null),
    col('duration_ms', 'float64', (r) => r.durationMs),
    col('tests', { listOf: [{ name: 'id', type: 'utf8' }, { name: 'outcome', type: 'utf8' }, { name: 'duration_ms', type: 'float64' }, { name: 'message', type: 'utf8' }] }, (r) =>
      r.tests.map((t) => ({ id: t.id, outcome: t.outcome, duration_ms: t.durationMs, message: t.message })),
    ),
    col(
      'hacks',
      { listOf: [{ name: 'kind', type: 'utf8' }, { name: 'evidence', type: 'utf8' }, { name: 'path', type: 'utf8' }, { name: 'line', type: 'int64' }, { name: 'source', type: 'utf8' }] },
      (r) => (r.hacks ?? []).map((h) => ({ kind: h.kind, evidence: h.evidence, path: h.path, line: h.line, source: h.source })),
    ),
    col('quarantine_reason', 'utf8', (r) => r.quarantine?.reason ?? null),
    col('rescore_id', 'utf8', (r) => r.rescoreId ?? null),
    // The reward under the task's RewardSpec; records from before it existed scored passed ? 1 : 0.
    col('score', 'float64', (r) => r.score ?? (r.passed ? 1 : 0)),
    col('check_kind', 'utf8', (r) => r.checkKind ?? 'tests'),
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
    col('fraction_passed', 'float64', (r) => r.fractionPassed ?? null),
    col('hacked', 'bool', (r) => r.hacked ?? false),
    // Records from before dispositions existed all went to the learner.
    col('disposition', 'utf8', (r) => r.disposition ?? 'learn'),
    col('reason', 'utf8', (r) => r.reason ?? null),
    col('rescore_id', 'utf8', (r) => r.rescoreId ?? null),
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

/** Task metadata (never the files or hidden tests), so analyses can group outcomes by tag, difficulty or source. */
export const TASKS: TableSpec<Row<Task>> = {
  table: 'tasks',
  topic: 'tasks',
  columns: [
    col('env_id', 'utf8', (r) => r.envId),
    col('title', 'utf8', (r) => r.title),
    col('tags', { listOf: 'utf8' }, (r) => r.tags),
    col('difficulty', 'float64', (r) => r.difficulty),
    col('priority', 'int64', (r) => r.priority),
    col('split', 'utf8', (r) => r.split),
    col('dataset', 'utf8', (r) => r.source.dataset),
    col('dataset_hash', 'utf8', (r) => r.source.datasetHash),
    col('source_row', 'int64', (r) => r.source.sourceRow),
    col('hidden_test_files', 'int64', (r) => Object.keys(r.hiddenTests).length),
    ...lineageColumns<Task>(),
  ],
};

/** Every analytics table, by the topic that feeds it. */
export const ANALYTICS_TABLES = [TRAJECTORIES, VERIFICATIONS, REWARDS, CHECKPOINTS, TASKS] as const;
export type AnyTableSpec = TableSpec<Row<never>>;

export function tableForTopic(topic: TopicKey): TableSpec<Row<unknown>> | undefined {
  return ANALYTICS_TABLES.find((spec) => spec.topic === topic) as TableSpec<Row<unknown>> | undefined;
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
