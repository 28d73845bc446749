import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { llmLearnerLaunch, llmLearnerProcess, servedGguf } from '../../cli/llm-learner.js';
import { repoRoot } from '../../cli/paths.js';
import { LocalCheckpointStore, LORA_SAFETENSORS_FORMAT } from '../../connectors/checkpoints/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { committedPastInputs, runLoop, type ExternalLearner } from '../../pipelines/loop/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions, type ResolvedLlmPolicyOptions } from '../../policies/index.js';
import { ProcessExitError, PYTEST_REPAIR_VERIFICATION, type Task } from '../../schemas/index.js';
import { freePort, imageFor, llamaCppWeightServer, llmComponent, llmLearnerPython, stackUp } from '../../stack/index.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';

/**
 * The llm policy trained inside the loop: the Python learner as the loop's external learner, weight sync
 * restarting a llama.cpp server of this test's own (a free port, its own state folder: the stack's shared
 * server is never restarted) with each adapter, and rollouts after the sync sampling the new version.
 */
const stateDir = tempDir('llm-loop-state');
const pool = new DockerSandboxPool();
let url = '';
let python = '';
let gguf = '';
let llm: ResolvedLlmPolicyOptions;
let task: Task;

const serverOptions = () => ({ url, external: false, daemonName: 'llm-loop-test', paths: { stateDir, cacheDir: join(process.env.HOME ?? '/root', '.cache', 'trialrun') }, parallel: 2, contextTokens: 8192 });

/** The Python learner on the context's topics and a checkpoint folder, batches of 2, its log in the state folder. */
function learnerFor(context: ProcessorContext, checkpoints: string, runId: string, extraArgs: string[] = []): { learner: ExternalLearner; log: string } {
  const env = { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: checkpoints };
  const log = join(stateDir, `learner-${runId}.log`);
  return { learner: llmLearnerProcess(python, llmLearnerLaunch({ gguf, runId, batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: ['--threads', '2', ...extraArgs] }, env), log), log };
}

before(async () => {
  await ensureStack();
  url = `http://127.0.0.1:${await freePort()}/v1`;
  await stackUp((line) => console.log(`# ${line}`), [llmComponent(serverOptions())]);
  python = await llmLearnerPython((line) => console.log(`# ${line}`), { logFile: join(stateDir, 'learner-venv.log') });
  gguf = await servedGguf(url.replace(/\/v1$/, ''));
  llm = resolveLlmPolicyOptions({ baseUrl: url, server: 'llama.cpp', maxTokensPerTurn: 48, concurrentEpisodes: 2 }, {});
  const [first] = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('llm-loop-rejects') })).tasks;
  // A 135M model almost never fixes the bug, and the two members of a group made the same tool calls and scored
  // the same in each of three runs (3-4 turns, temperatures 1 and 2, partial credit less a turn penalty): no
  // advantage, no batch, no checkpoint. So the reward here is partial credit over hidden tests that include five
  // fair coins (os.urandom, drawn in the verifier's sandbox): members differ by chance (p = 0.75 a group), not by
  // what the model did, which is all a test of the plumbing needs. No reference runs: they would quarantine the task as flaky.
  const coins = Array.from({ length: 5 }, (_, i) => `def test_coin_${i}():\n    assert os.urandom(1)[0] < 128\n`).join('\n\n');
  task = { ...first!, hiddenTests: { ...first!.hiddenTests, 'test_coins.py': `import os\n\n\n${coins}` }, verification: { ...PYTEST_REPAIR_VERIFICATION, reward: { shape: 'fraction' } } };
}, { timeout: 1_200_000 });

after(async () => {
  await llmComponent(serverOptions()).stop(() => {});
  await pool.close();
});

const loopOptions = (context: ProcessorContext, runId: string, checkpoints: string) => ({
  tasks: [task],
  dataDir: tempDir(`llm-loop-data-${runId}`),
  pool,
  imageFor,
  checkpoints: new LocalCheckpointStore(checkpoints),
  policyId: LLM_POLICY,
  llm,
  runId,
  groupSize: 2,
  batchSize: 2,
  maxTurns: 3,
  rolloutWorkers: 1,
  verifiers: 1,
  referenceRuns: 0,
});

test('a learner that exits on its own fails the loop with an error naming its log', { timeout: 600_000 }, async () => {
  const context = await freshContext('llm-loop-fail');
  const checkpoints = tempDir('llm-loop-fail-ckpt');
  // A bad option: the learner exits with status 2 before touching Kafka or the model.
  const { learner, log } = learnerFor(context, checkpoints, 'llm-loop-fail', ['--epochs', '0']);
  await assert.rejects(runLoop(context, { ...loopOptions(context, 'llm-loop-fail', checkpoints), externalLearner: learner }), (error: unknown) => {
    assert.ok(error instanceof ProcessExitError, String(error));
    assert.match(error.message, /the LLM learner exited with status 2 while the loop ran/);
    assert.ok(error.message.includes(log), 'the error names the log');
    return true;
  });
  assert.match(readFileSync(log, 'utf8'), /epochs/, 'the log says what was wrong');
});

test('the loop runs the Python learner: its checkpoints are served, later turns carry the new version, every record counted once', { timeout: 1_800_000 }, async () => {
  const context = await freshContext('llm-loop');
  const checkpoints = tempDir('llm-loop-ckpt');
  const runId = 'llm-loop-it';
  const { learner } = learnerFor(context, checkpoints, runId);
  const summary = await runLoop(context, {
    ...loopOptions(context, runId, checkpoints),
    externalLearner: learner,
    weightServer: llamaCppWeightServer({ ...serverOptions(), workDir: join(stateDir, 'adapters') }),
    // Epochs (one group of 2 episodes each) go on until one is sampled by the first update the server serves.
    untilVersion: 1,
    // Within the test's own timeout: a run that cannot end fails with the loop's error, which says what it waited on.
    timeoutMs: 1_500_000,
  });
  const [trajectories, verifications, rewards, published] = await Promise.all([
    readAll(context, 'trajectories'),
    readAll(context, 'verifications'),
    readAll(context, 'rewards'),
    readAll(context, 'policyCheckpoints'),
  ]);
  console.log(`# ${summary.epochs} epochs, ${trajectories.length} trajectories, rewards ${rewards.map((r) => r.reward.toFixed(2)).join(' ')}, checkpoints ${published.map((c) => `v${c.version}`).join(' ')}`);
  // Exact counts: one trajectory per episode published, one verification and one reward each; no dead letter.
  assert.equal(summary.deadLetters, 0);
  assert.equal(trajectories.length, summary.epochs * 2);
  assert.equal(verifications.length, trajectories.length);
  assert.equal(rewards.length, trajectories.length);
  assert.equal(summary.trajectories, trajectories.length);
  // The Python learner's checkpoints, one per batch of 2 learnable samples, numbered from 1.
  const learnable = rewards.filter((r) => (r.disposition ?? 'learn') === 'learn').length;
  assert.ok(published.length >= 1, `at least one checkpoint (${learnable} learnable rewards)`);
  // A sample whose version lags the learner's past its staleness bound is dropped, and a batch of only such samples
  // gives no checkpoint: when rollouts outpace the updates (22 epochs against 9 updates in a 7-minute run here), fewer than
  // one per two learnable samples. Each checkpoint trains one or two of them.
  assert.ok(published.length <= Math.floor(learnable / 2), `${published.length} checkpoints for ${learnable} learnable rewards`);
  for (const c of published) assert.ok(c.metrics.samples >= 1 && c.metrics.samples <= 2, `v${c.version} trained ${c.metrics.samples} samples`);
  assert.deepEqual(published.map((c) => c.version), published.map((_, i) => i + 1));
  for (const c of published) {
    assert.equal(c.policyId, LLM_POLICY);
    assert.equal(c.lineage.runId, runId);
    assert.equal(c.artifact?.format, LORA_SAFETENSORS_FORMAT);
  }
  assert.equal(summary.checkpoints, published.length, 'every checkpoint landed');
  // The end condition: the learner consumed every input, and the server serves the newest version.
  assert.ok(await committedPastInputs(context, learner.groupId));
  const served = ((await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;
  assert.equal(served, `smollm2-135m-instruct@v${published.at(-1)!.version}`);
  // Turns sampled after the sync carry the version the server named.
  const laterTurns = trajectories.flatMap((t) => t.steps.filter((s) => s.llm !== null && (s.llm.policyVersion ?? 0) >= 1).map((s) => s.llm!));
  assert.ok(laterTurns.length >= 1, 'some turns were sampled by a trained version');
  for (const turn of laterTurns) assert.equal(turn.model, `smollm2-135m-instruct@v${turn.policyVersion}`);
});
