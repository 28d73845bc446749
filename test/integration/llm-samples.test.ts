import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../../cli/paths.js';
import { AnalyticsCatalog, parseNotebook, runNotebook, type CellResult } from '../../connectors/analytics/index.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { runLoop } from '../../pipelines/loop/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions } from '../../policies/index.js';
import { llmTrainingSamples, STACK_LLM_URL, type Reward, type Trajectory, type Verification } from '../../schemas/index.js';
import { cachedVenv, imageFor, llmComponent, stackPaths, stackUp } from '../../stack/index.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';

/**
 * One small real run of the llm policy (SmolLM2-135M on the stack's llama.cpp server, 2 tasks x 2
 * episodes of at most 3 turns) through the whole loop into the analytics store; then the training samples,
 * their export and the LLM notebook are checked against the topics themselves.
 */
const run = promisify(execFile);
const pool = new DockerSandboxPool();
const PYARROW = '26.0.1';
/** The broker's default largest message (message.max.bytes); the stack does not change it. */
const BROKER_MAX_MESSAGE_BYTES = 1_048_588;

let context: ProcessorContext;
let dataDir: string;
let trajectories: Trajectory[];
let rewards: Reward[];
let verifications: Verification[];
let python: string;

before(async () => {
  await ensureStack();
  await stackUp((line) => console.log(`# ${line}`), [llmComponent({ url: STACK_LLM_URL, external: false })]);
  python = await cachedVenv(
    { dir: join(stackPaths().cacheDir, `test-pyarrow-${PYARROW}-venv`), installs: [[`pyarrow==${PYARROW}`]], check: 'import pyarrow.parquet', what: `pyarrow ${PYARROW}` },
    'python3',
    join(tempDir('pyarrow'), 'pip.log'),
    (line) => console.log(`# ${line}`),
  );
  context = await freshContext('llm-samples');
  dataDir = tempDir('llm-samples');
  const summary = await runLoop(context, {
    taskFile: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'),
    limitTasks: 2,
    dataDir,
    pool,
    imageFor,
    checkpoints: new LocalCheckpointStore(tempDir('llm-samples-checkpoints')),
    policyId: LLM_POLICY,
    llm: resolveLlmPolicyOptions({ baseUrl: STACK_LLM_URL, maxTokensPerTurn: 64 }, {}),
    groupSize: 2,
    maxTurns: 3,
    rolloutWorkers: 1,
    verifiers: 1,
  });
  assert.equal(summary.trajectories, 4);
  [trajectories, rewards, verifications] = await Promise.all([readAll(context, 'trajectories'), readAll(context, 'rewards'), readAll(context, 'verifications')]);
}, { timeout: 1_500_000 });
after(() => pool.close());

/** Rows as objects; BIGINTs (JSON strings from DuckDB, for exactness past 2^53) as numbers, since these are all small. */
async function query(sql: string): Promise<Array<Record<string, unknown>>> {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const result = await catalog.query(sql);
    const cell = (value: unknown, type: string): unknown => (type === 'BIGINT' && value !== null ? Number(value) : value);
    return result.rows.map((row) => Object.fromEntries(result.columns.map((name, i) => [name, cell(row[i], result.types![i]!)])));
  } finally {
    catalog.close();
  }
}

/** The samples a trainer should get, computed from the topics: the prefix rule on each trajectory, with its live reward. */
function expectedSamples(): Array<Record<string, unknown>> {
  const live = new Map(rewards.filter((r) => (r.rescoreId ?? null) === null).map((r) => [r.trajectoryId, r]));
  return trajectories
    .flatMap((t) =>
      llmTrainingSamples(t.steps).map((s) => ({
        trajectory_id: t.trajectoryId,
        group_id: t.groupId,
        task_id: t.lineage.taskId,
        sample_index: s.sampleIndex,
        prompt_ids: s.promptIds,
        completion_ids: s.completionIds,
        completion_mask: s.completionMask,
        completion_logprobs: s.completionLogprobs,
        completion_policy_versions: s.completionPolicyVersions,
        turn_policy_versions: s.turnPolicyVersions,
        is_truncated: s.truncated,
        reward: live.get(t.trajectoryId)!.reward,
        advantage: live.get(t.trajectoryId)!.advantage,
      })),
    )
    .sort((a, b) => (a.trajectory_id < b.trajectory_id ? -1 : a.trajectory_id > b.trajectory_id ? 1 : a.sample_index - b.sample_index));
}

const SAMPLE_COLUMNS = ['trajectory_id', 'group_id', 'task_id', 'sample_index', 'prompt_ids', 'completion_ids', 'completion_mask', 'completion_logprobs', 'completion_policy_versions', 'turn_policy_versions', 'is_truncated', 'reward', 'advantage'];
const pick = (row: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(SAMPLE_COLUMNS.map((name) => [name, row[name]]));

test('every LLM turn lands in the analytics store: tokens, latency, finish reason, invalid replies, sampling, model and tokenizer', { timeout: 300_000 }, async () => {
  const turns = trajectories.flatMap((t) => t.steps.filter((s) => s.llm).map((s) => ({ t, s, llm: s.llm! })));
  assert.ok(turns.length >= 4, `model turns: ${turns.length}`);
  const rows = await query('SELECT * FROM llm_turns ORDER BY trajectory_id, step_index');
  const key = (trajectoryId: string, step: number): string => `${trajectoryId}/${step}`;
  const landed = new Map(rows.map((row) => [key(String(row.trajectory_id), Number(row.step_index)), row]));
  assert.equal(rows.length, turns.length);
  for (const { t, s, llm } of turns) {
    const row = landed.get(key(t.trajectoryId, s.index))!;
    assert.deepEqual(
      {
        tool: row.tool, ok: row.ok, model: row.model, tokenizer: row.tokenizer, chat_template_sha256: row.chat_template_sha256, turn_policy_version: row.turn_policy_version,
        finish_reason: row.finish_reason, prompt_tokens: row.prompt_tokens, appended_prompt_tokens: row.appended_prompt_tokens, completion_tokens: row.completion_tokens,
        extends_previous: row.extends_previous, latency_ms: row.latency_ms, constrained: row.constrained, invalid_reply: row.invalid_reply, seed: row.seed, max_tokens: row.max_tokens,
      },
      {
        tool: s.toolCall.name, ok: s.toolResult.ok, model: llm.model, tokenizer: llm.tokenizer, chat_template_sha256: llm.chatTemplateSha256, turn_policy_version: llm.policyVersion,
        finish_reason: llm.finishReason, prompt_tokens: llm.tokens!.promptLength, appended_prompt_tokens: llm.tokens!.appendedPromptIds.length, completion_tokens: llm.tokens!.completionIds.length,
        extends_previous: llm.tokens!.extendsPrevious, latency_ms: llm.latencyMs, constrained: true, invalid_reply: llm.invalidReply, seed: llm.sampling!.seed, max_tokens: 64,
      },
    );
  }
  // The record size per episode, as the registry frames it for the topic (magic byte, schema id, JSON).
  for (const trajectory of trajectories) {
    const bytes = (await context.serde.encode('trajectories', trajectory)).length;
    const tokens = llmTrainingSamples(trajectory.steps).reduce((sum, s) => sum + s.promptIds.length + s.completionIds.length, 0);
    console.log(`# trajectory record: ${trajectory.steps.filter((s) => s.llm).length} model turns, ${tokens} tokens, ${bytes} bytes in the registry's framing`);
    assert.ok(bytes < BROKER_MAX_MESSAGE_BYTES / 10, `${bytes} bytes: far under the broker's message limit`);
  }
});

test('the training_samples view is the prefix rule on the topics\' trajectories with their live rewards; masks and logprobs line up with the completions', { timeout: 300_000 }, async () => {
  const expected = expectedSamples();
  assert.ok(expected.length >= 4, 'at least one sample per episode');
  const rows = await query('SELECT * FROM training_samples ORDER BY trajectory_id, sample_index');
  assert.deepEqual(rows.map(pick), expected);
  for (const row of rows) {
    const completion = row.completion_ids as number[];
    assert.equal((row.completion_mask as number[]).length, completion.length);
    assert.equal((row.completion_logprobs as number[]).length, completion.length);
    assert.equal(row.completion_tokens, completion.length);
    assert.equal(row.prompt_tokens, (row.prompt_ids as number[]).length);
    assert.equal(row.policy_id, LLM_POLICY);
    assert.ok(['learn', 'no-signal', 'withheld', 'late'].includes(String(row.disposition)));
  }
});

test('trialrun export samples writes Parquet that a stock pyarrow reads (token arrays as lists), and JSON Lines with the same samples', { timeout: 300_000 }, async () => {
  const out = tempDir('llm-export');
  const cli = (args: string[]): Promise<{ stdout: string }> => run(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'export', 'samples', '--data-dir', dataDir, ...args], { cwd: repoRoot() });
  const parquet = join(out, 'samples.parquet');
  const { stdout } = await cli(['--format', 'parquet', '--out', parquet]);
  const expected = expectedSamples();
  assert.match(stdout, new RegExp(`wrote ${expected.length} samples of ${trajectories.length} trajectories to`));
  const read = JSON.parse((await run(python, [join(repoRoot(), 'test', 'integration', 'python', 'read_samples.py'), parquet])).stdout) as { schema: Record<string, string>; rows: Array<Record<string, unknown>> };
  assert.equal(read.schema.prompt_ids, 'list<element: int32>');
  assert.equal(read.schema.completion_mask, 'list<element: int32>');
  assert.equal(read.schema.completion_logprobs, 'list<element: double>');
  assert.equal(read.schema.advantage, 'double');
  assert.deepEqual(read.rows.map(pick), expected);

  const jsonl = join(out, 'samples.jsonl');
  await cli(['--format', 'jsonl', '--out', jsonl]);
  const lines = readFileSync(jsonl, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(lines.map(pick), expected);

  // A disposition filter, and the refusals.
  const learn = expected.filter((s) => rewards.find((r) => r.trajectoryId === s.trajectory_id && (r.rescoreId ?? null) === null)!.disposition === 'learn');
  if (learn.length > 0) {
    await cli(['--format', 'jsonl', '--out', jsonl, '--disposition', 'learn']);
    assert.equal(readFileSync(jsonl, 'utf8').trim().split('\n').length, learn.length);
  }
  await assert.rejects(cli(['--out', parquet, '--disposition', 'maybe']), (error: { stderr: string; code: number }) => /--disposition must be one of learn, no-signal, withheld, late, got "maybe"/.test(error.stderr) && error.code === 2);
  await assert.rejects(cli(['--format', 'csv', '--out', parquet]), (error: { stderr: string }) => /--format must be one of parquet, jsonl/.test(error.stderr));
});

test('the llm-rollouts notebook renders on the run, its counts those of the topics', { timeout: 300_000 }, async () => {
  const notebook = parseNotebook('llm-rollouts', readFileSync(join(repoRoot(), 'notebooks', 'llm-rollouts.sql'), 'utf8'));
  const catalog = await AnalyticsCatalog.open(dataDir);
  let results: CellResult[];
  try {
    results = await runNotebook(catalog, notebook);
  } finally {
    catalog.close();
  }
  const cell = (id: string): Array<Record<string, unknown>> => results.find((c) => c.id === id)!.records as Array<Record<string, unknown>>;
  assert.ok(results.every((c) => c.svgs.length === 1), 'every query drew its chart');
  const turns = trajectories.flatMap((t) => t.steps.flatMap((s) => (s.llm ? [s.llm] : [])));

  const reasons = new Map<string, number>();
  for (const llm of turns) reasons.set(llm.finishReason ?? 'none', (reasons.get(llm.finishReason ?? 'none') ?? 0) + 1);
  assert.deepEqual(new Map(cell('finish_reasons').map((r) => [String(r.finish_reason), Number(r.turns)])), reasons);

  const invalid = cell('invalid_calls');
  assert.equal(invalid.reduce((sum, r) => sum + Number(r.turns), 0), turns.length);
  assert.equal(invalid.reduce((sum, r) => sum + Number(r.invalid), 0), turns.filter((llm) => llm.invalidReply !== null).length);
  for (const r of invalid) assert.ok(Number(r.low) <= Number(r.invalid_rate) && Number(r.invalid_rate) <= Number(r.high));

  const episodes = cell('tokens_per_episode');
  assert.equal(episodes.length, trajectories.length);
  for (const t of trajectories) {
    const row = episodes.find((r) => r.trajectory_id === t.trajectoryId)!;
    const [sample] = llmTrainingSamples(t.steps);
    assert.equal(Number(row.sequence_tokens), sample!.promptIds.length + sample!.completionIds.length);
  }

  const verdicts = verifications.filter((v) => (v.rescoreId ?? null) === null);
  const [pass] = cell('pass_rate_by_version');
  assert.equal(Number(pass!.episodes), trajectories.length);
  assert.equal(Number(pass!.passed), verdicts.filter((v) => v.passed).length);
  assert.equal(cell('turn_latency').length, 2, 'p50 and p95 for the one policy version');
});
