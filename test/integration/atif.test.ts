import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../../cli/paths.js';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import { rescore } from '../../pipelines/jobs/rescore/index.js';
import { GlobalTable, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { Verifier } from '../../pipelines/verifier/index.js';
import { llmTrainingSamples, Trajectory, type LlmCall } from '../../schemas/index.js';
import { harborModelsPython, imageFor } from '../../stack/index.js';
import { syntheticReward, syntheticTrajectory, syntheticVerification } from './analytics-fixtures.js';
import { ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';
import { bundledTasks } from './verifier-fixtures.js';

/**
 * ATIF both ways through the real stack: LLM trajectories (token ids, logprobs, a turn that extends the previous
 * one and one that starts anew) with their verdicts and rewards go onto fresh topics and through the analytics
 * sink into a store; `trialrun export atif` writes them, harbor's own models (its PyPI package, in its cached
 * virtualenv) validate every file; `trialrun import atif` puts them back onto other fresh topics, beside files
 * that are not ATIF or break it, and what comes back is the trajectories that went in, as records and in SQL.
 * Last, another system's ATIF files (with the final files their agent left) are imported and re-scored.
 */
const run = promisify(execFile);
const RUN = 'atif-run';
const COUNT = 6;

let source: ProcessorContext;
let target: ProcessorContext;
let storeDir: string;
let python: string;
let originals: Trajectory[];
const pool = new DockerSandboxPool();
after(() => pool.close());

function turn(appended: number[], promptLength: number, extendsPrevious: boolean, completion: number[], seed: number): LlmCall {
  return {
    model: 'smollm2-135m',
    content: null,
    finishReason: completion.length >= 4 ? 'length' : 'stop',
    promptTokens: promptLength,
    completionTokens: completion.length,
    logprobs: completion.map((id, k) => -((id * 7 + k) % 50) / 10),
    latencyMs: 40 + seed,
    attempts: 1,
    tokens: { appendedPromptIds: appended, promptLength, extendsPrevious, completionIds: completion },
    sampling: { temperature: 1, topP: 0.95, maxTokens: 4, seed },
    tokenizer: 'tok-smollm2',
    chatTemplateSha256: 'a'.repeat(64),
    policyVersion: 0,
    constrained: true,
    invalidReply: seed % 3 === 0 ? 'no tool call' : null,
  };
}

/** The i-th synthetic trajectory with model turns on its first three steps: 0, then 1 extending it, then 2 anew. */
function llmTrajectory(i: number): Trajectory {
  const base = syntheticTrajectory(i, { runId: RUN, steps: 4, tasks: 3 });
  const prompt = [1, 2, 3, 100 + i];
  const calls = [turn(prompt, 4, false, [10 + i, 11, 12], i), turn([20, 21], 9, true, [13, 14, 15, 16], i + 1), turn([1, 2, 99], 3, false, [17], i + 2)];
  return Trajectory.parse({ ...base, steps: base.steps.map((step, s) => ({ ...step, decision: null, llm: calls[s] ?? null })) });
}

async function produce(context: ProcessorContext, records: { trajectories: Trajectory[]; i: number[] }): Promise<void> {
  const producer = context.kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    const options = { runId: RUN, steps: 4, tasks: 3 };
    await producer.send({ topic: context.names.name('trajectories'), messages: await Promise.all(records.trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))) });
    await producer.send({ topic: context.names.name('verifications'), messages: await Promise.all(records.i.map(async (i) => ({ key: 'g', value: await context.serde.encode('verifications', syntheticVerification(i, options)) }))) });
    await producer.send({ topic: context.names.name('rewards'), messages: await Promise.all(records.i.map(async (i) => ({ key: 'g', value: await context.serde.encode('rewards', syntheticReward(i, options)) }))) });
  } finally {
    await producer.disconnect();
  }
}

/** Runs an analytics sink on `context` until `table` holds `rows` rows in `dataDir`. */
async function land(context: ProcessorContext, dataDir: string, expected: Record<string, number>): Promise<void> {
  const sink = new AnalyticsSink(context, { dataDir, topics: Object.keys(expected) as Array<'trajectories'>, rollAgeMs: 300 });
  await sink.start();
  try {
    await eventually(
      'the records landed',
      async () => {
        const catalog = await AnalyticsCatalog.open(dataDir);
        try {
          for (const [table, rows] of Object.entries(expected)) {
            const result = await catalog.query(`SELECT count(*)::INTEGER FROM ${table}`);
            if ((result.rows[0]![0] as number) < rows) return false;
          }
          return true;
        } finally {
          catalog.close();
        }
      },
      120_000,
    );
  } finally {
    await sink.stop();
  }
}

const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> =>
  run(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), ...args], { cwd: repoRoot(), env: { ...process.env, ...env } });

before(async () => {
  await ensureStack();
  python = await harborModelsPython((line) => console.log(`# ${line}`), { logFile: join(tempDir('harbor-pip'), 'pip.log') });
  source = await freshContext('atif');
  storeDir = tempDir('atif-store');
  const indices = Array.from({ length: COUNT }, (_, i) => i);
  originals = indices.map(llmTrajectory);
  await produce(source, { trajectories: originals, i: indices });
  await land(source, storeDir, { trajectories: COUNT, verifications: COUNT, rewards: COUNT });
  target = await freshContext('atif-import');
}, { timeout: 900_000 });

let exported: string;

test('export atif writes one file per trajectory of the run, and harbor\'s own models accept every one', { timeout: 300_000 }, async () => {
  exported = tempDir('atif-out');
  const { stdout } = await cli(['export', 'atif', '--run', RUN, '--out', exported, '--data-dir', storeDir]);
  assert.match(stdout, new RegExp(`wrote ${COUNT} ATIF trajectories \\(${COUNT * 5} steps, ${COUNT * 3} with token ids\\)`));
  const files = readdirSync(exported).map((name) => join(exported, name));
  assert.equal(files.length, COUNT);
  const report = JSON.parse((await run(python, [join(repoRoot(), 'test', 'integration', 'python', 'validate_atif.py'), ...files])).stdout) as { errors: Record<string, string[]>; versions: string[] };
  assert.deepEqual(report.errors, Object.fromEntries(files.map((file) => [file, []])));
  assert.deepEqual(report.versions, files.map(() => 'ATIF-v1.8'));

  // What harbor accepted holds what trialrun recorded: each turn's whole prompt and its completion, and the reward.
  for (const file of files) {
    const document = JSON.parse(readFileSync(file, 'utf8')) as { trajectory_id: string; steps: Array<{ metrics?: { prompt_token_ids?: number[]; completion_token_ids?: number[]; logprobs?: number[] } }>; final_metrics: { extra: { trialrun: { reward: { reward: number } } } } };
    const original = originals.find((t) => t.trajectoryId === document.trajectory_id)!;
    const [first, second, third] = original.steps.map((s) => s.llm!);
    const m = document.steps.map((s) => s.metrics);
    assert.deepEqual(m[1]!.prompt_token_ids, first!.tokens!.appendedPromptIds);
    assert.deepEqual(m[2]!.prompt_token_ids, [...first!.tokens!.appendedPromptIds, ...first!.tokens!.completionIds, ...second!.tokens!.appendedPromptIds]);
    assert.deepEqual(m[2]!.completion_token_ids, second!.tokens!.completionIds);
    assert.deepEqual(m[2]!.logprobs, second!.logprobs);
    assert.deepEqual(m[3]!.prompt_token_ids, third!.tokens!.appendedPromptIds);
    assert.equal(m[4], undefined);
    const i = Number(document.trajectory_id.split('/t')[1]);
    assert.equal(document.final_metrics.extra.trialrun.reward.reward, syntheticReward(i, { runId: RUN, steps: 4, tasks: 3 }).reward);
  }
});

test('import atif puts them back onto fresh topics, the same trajectories (ids, steps, token ids), queryable in SQL; files that are not ATIF or break it are rejected and named', { timeout: 300_000 }, async () => {
  // Beside the exported files: a file that is not ATIF, one with a bad field, and a JSON Lines file with one good line and one broken.
  const bad = tempDir('atif-bad');
  writeFileSync(join(bad, 'rows.json'), JSON.stringify({ rows: [{ a: 1 }] }));
  const broken = JSON.parse(readFileSync(join(exported, readdirSync(exported)[0]!), 'utf8')) as { steps: Array<{ metrics?: { logprobs?: number[] } }> };
  broken.steps[2]!.metrics!.logprobs = [-1];
  writeFileSync(join(bad, 'broken.json'), JSON.stringify(broken));
  mkdirSync(join(bad, 'lines'));
  writeFileSync(join(bad, 'lines', 'more.jsonl'), `${readFileSync(join(exported, readdirSync(exported)[1]!), 'utf8').replace(/\n/g, '')}\n{"schema_version": \n`);

  const env = { TRIALRUN_TOPIC_PREFIX: target.names.prefix };
  const importDir = tempDir('atif-import-data');
  const failed = await cli(['import', 'atif', exported, join(bad, 'rows.json'), join(bad, 'broken.json'), join(bad, 'lines', 'more.jsonl'), '--data-dir', importDir], env).then(
    () => assert.fail('exit 0 despite rejects'),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  assert.equal(failed.code, 1);
  assert.match(failed.stdout, new RegExp(`imported ${COUNT + 1} trajectories \\(${(COUNT + 1) * 4} steps, ${(COUNT + 1) * 3} with token ids; runs ${RUN}\\) from ${COUNT + 3} files; 3 rejected, listed in `));
  assert.match(failed.stderr, /rows\.json is invalid: not an ATIF trajectory/);
  assert.match(failed.stderr, /broken\.json is invalid: steps\[2\] \(step_id 3\)\.metrics\.logprobs: 1 logprobs for 4 completion tokens/);
  assert.match(failed.stderr, /more\.jsonl:2: not JSON/);
  const rejectsDir = join(importDir, 'rejects');
  const rejects = readFileSync(join(rejectsDir, readdirSync(rejectsDir)[0]!), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { source: string; row: number; reason: string });
  assert.deepEqual(rejects.map((r) => [r.source, r.row]).sort(), [[join(bad, 'broken.json'), 1], [join(bad, 'lines', 'more.jsonl'), 2], [join(bad, 'rows.json'), 1]]);

  const back = await readAll(target, 'trajectories');
  assert.equal(back.length, COUNT + 1);
  const byId = new Map<string, Trajectory>();
  for (const t of back) byId.set(t.trajectoryId, t);
  assert.equal(byId.size, COUNT);
  for (const original of originals) {
    const t = byId.get(original.trajectoryId)!;
    // The store keeps neither the final files nor the decision features (none here): the rest is the record that went in.
    assert.deepEqual(t, { ...original, finalFiles: {} });
    assert.deepEqual(llmTrainingSamples(t.steps), llmTrainingSamples(original.steps));
  }

  // Landed like any other run, the imported trajectories have the same samples in SQL.
  const landedDir = tempDir('atif-import-store');
  await land(target, landedDir, { trajectories: COUNT + 1 });
  const catalog = await AnalyticsCatalog.open(landedDir, { runIds: [RUN] });
  const originalCatalog = await AnalyticsCatalog.open(storeDir, { runIds: [RUN] });
  try {
    const sql = 'SELECT DISTINCT trajectory_id, task_id, num_steps, to_json(llm_samples) AS samples, to_json(steps) AS steps FROM trajectories ORDER BY trajectory_id';
    const [imported, original] = await Promise.all([catalog.query(sql), originalCatalog.query(sql)]);
    assert.equal(original.rows.length, COUNT);
    assert.deepEqual(imported.rows, original.rows);
  } finally {
    catalog.close();
    originalCatalog.close();
  }
});

test('another system\'s ATIF, imported with its task given, is re-scored by the verifier from the final files it carries', { timeout: 420_000 }, async () => {
  const context = await freshContext('atif-rescore');
  const [task] = await bundledTasks(1);
  const producer = context.kafka.producer();
  await producer.connect();
  await producer.send({ topic: context.names.name('tasks'), messages: [{ key: task!.taskId, value: await context.serde.encode('tasks', task!) }] }).finally(() => producer.disconnect());
  // As a harness writes it: no trialrun fields but the final workspace, under extra.trialrun.final_files.
  const foreign = (id: string, finalFiles: Record<string, string>): unknown => ({
    schema_version: 'ATIF-v1.5',
    session_id: id,
    agent: { name: 'other-harness', version: '0.3.1', model_name: 'some-model' },
    steps: [
      { step_id: 1, source: 'user', message: task!.description },
      { step_id: 2, source: 'agent', message: 'Writing the fix.', tool_calls: [{ tool_call_id: 'w', function_name: 'write_file', arguments: { path: Object.keys(finalFiles)[0] } }], observation: { results: [{ source_call_id: 'w', content: 'written' }] } },
    ],
    extra: { trialrun: { final_files: finalFiles } },
  });
  const dir = tempDir('atif-foreign');
  writeFileSync(join(dir, 'fixed.json'), JSON.stringify(foreign('fixed', { ...task!.files, ...task!.referenceSolution! })));
  writeFileSync(join(dir, 'untouched.json'), JSON.stringify(foreign('untouched', task!.files)));
  // Without a task the file names none, and is rejected for it.
  const untasked = await cli(['import', 'atif', join(dir, 'fixed.json'), '--data-dir', tempDir('atif-untasked')], { TRIALRUN_TOPIC_PREFIX: context.names.prefix }).then(
    () => assert.fail('imported without a task'),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(untasked.code, 1);
  assert.match(untasked.stderr, /fixed\.json is invalid: extra\.trialrun\.task_id: the file names no task; give one with --task/);
  const { stdout } = await cli(['import', 'atif', dir, '--task', task!.taskId, '--env', task!.envId, '--run', 'atif-foreign'], { TRIALRUN_TOPIC_PREFIX: context.names.prefix });
  assert.match(stdout, /imported 2 trajectories \(2 steps, 0 with token ids; runs atif-foreign\) from 2 files/);

  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  try {
    const verifier = new Verifier({ runId: 'atif-foreign', pool, imageFor, tasks, referenceRuns: 1 });
    const report = await rescore(context, verifier, { from: 'earliest', expectVersion: await verifier.version() });
    assert.deepEqual([report.trajectoriesRead, report.verificationsWritten, report.skipped.length], [2, 2, 0]);
    const verdicts = new Map((await readAll(context, 'verifications')).map((v) => [v.trajectoryId, v.passed]));
    assert.deepEqual(verdicts, new Map([['fixed', true], ['untouched', false]]));
  } finally {
    await tasks.close();
  }
});

test('user errors of export and import atif are one line and exit 2, before anything is written', { timeout: 120_000 }, async () => {
  const refused = (args: string[]): Promise<{ code: number; stderr: string }> =>
    cli(args).then(
      () => assert.fail(`${args.join(' ')} succeeded`),
      (error: { code: number; stderr: string }) => error,
    );
  const cases: Array<[string[], RegExp]> = [
    [['export', 'atif', '--data-dir', storeDir], /^trialrun export: export atif needs --run <id>/],
    [['export', 'atif', '--run', 'no-such-run', '--data-dir', storeDir], /^trialrun export: no rows for run "no-such-run" under .*; runs there: atif-run/],
    [['export', 'atif', '--run', RUN, '--disposition', 'learn', '--data-dir', storeDir], /^trialrun export: --disposition is for export samples/],
    [['import', 'atif'], /^trialrun import: import what\? use "import atif <files\.\.\.>"/],
    [['import', 'atif', join(storeDir, 'no-such.json')], /^trialrun import: no such file or folder .*no-such\.json/],
    [['import', 'atif', join(storeDir, '_sink')], /^trialrun import: no \.json or \.jsonl files in /],
  ];
  for (const [args, message] of cases) {
    const { code, stderr } = await refused(args);
    assert.equal(code, 2, args.join(' '));
    assert.match(stderr, message);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
  }
});
