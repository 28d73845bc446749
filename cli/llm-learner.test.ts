import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolveLlmPolicyOptions } from '../policies/index.js';
import { checkoutFile, ConfigError, ProcessExitError } from '../schemas/index.js';
import { llmThreadShare } from '../stack/index.js';
import { learnerCheckpoints, llmLearnerArgs, llmLearnerLaunch, llmLearnerProcess, llmServerRoot, loopLearnerFlags, servedGguf } from './llm-learner.js';

test('the learner gets the stack endpoints and names of this environment, and the caller\'s flags last', () => {
  const launch = llmLearnerLaunch(
    { gguf: '/m.gguf', runId: 'r1', batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: ['--kl-coef', '0.05'] },
    { KAFKA_BROKERS: 'a:1,b:2', SCHEMA_REGISTRY_URL: 'http://reg:8081/apis/ccompat/v7', TRIALRUN_TOPIC_PREFIX: 'exp1.', TRIALRUN_CHECKPOINTS: 'file:///tmp/ckpt' },
  );
  assert.deepEqual(llmLearnerArgs(launch), [
    '-m', 'trialrun_llm_learner', '--gguf', '/m.gguf', '--checkpoints', '/tmp/ckpt', '--brokers', 'a:1,b:2', '--registry-url', 'http://reg:8081/apis/ccompat/v7',
    '--topic-prefix', 'exp1.', '--run-id', 'r1', '--batch-size', '2', '--session-timeout-ms', '10000', '--kl-coef', '0.05',
  ]);
  assert.throws(() => llmLearnerLaunch({ gguf: '/m.gguf', runId: 'r', batchSize: 1, sessionTimeoutMs: 6000, extraArgs: [] }, { TRIALRUN_TOPIC_PREFIX: '' }), /TRIALRUN_TOPIC_PREFIX is set but empty/);
});

test('the Python learner writes a local folder itself and reaches an s3:// store through the checkpoint channel; other locations are refused by name', () => {
  assert.equal(learnerCheckpoints('/data/ckpt'), '/data/ckpt');
  assert.equal(learnerCheckpoints('file:///data/ckpt'), '/data/ckpt');
  assert.equal(learnerCheckpoints('s3://bucket/ckpt'), 's3://bucket/ckpt');
  assert.throws(() => learnerCheckpoints('s3://No_Bucket/ckpt'), (error: unknown) => error instanceof ConfigError && /^TRIALRUN_CHECKPOINTS: "No_Bucket" .* is not an S3 bucket name/.test(error.message));
  assert.throws(() => learnerCheckpoints('gs://bucket/ckpt'), (error: unknown) => error instanceof ConfigError && /^TRIALRUN_CHECKPOINTS: no store for "gs:\/\/" locations/.test(error.message));
  const launch = llmLearnerLaunch({ gguf: '/m.gguf', runId: 'r1', batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: [] }, { TRIALRUN_CHECKPOINTS: 's3://bucket/ckpt' });
  const args = llmLearnerArgs(launch);
  assert.deepEqual(args.slice(args.indexOf('--checkpoints'), args.indexOf('--checkpoints') + 4), ['--checkpoints', 's3://bucket/ckpt', '--checkpoint-channel-fd', '3']);
  assert.ok(!llmLearnerArgs({ ...launch, checkpoints: '/data/ckpt' }).includes('--checkpoint-channel-fd'), 'a folder needs no channel');
});

test('the GGUF is the one the llama.cpp server reports serving; a server that names none is a clear error', async () => {
  assert.equal(llmServerRoot({ LLM_BASE_URL: 'http://h:1/v1/' }), 'http://h:1');
  let props: unknown = { model_path: process.execPath };
  const server = createServer((_, res) => void res.end(JSON.stringify(props))).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    assert.equal(await servedGguf(root), process.execPath);
    props = { model_path: '/nowhere/m.gguf' };
    await assert.rejects(servedGguf(root), /serves \/nowhere\/m\.gguf, which is not a file on this machine/);
    props = {};
    await assert.rejects(servedGguf(root), /names no model_path/);
  } finally {
    server.close();
  }
  await assert.rejects(servedGguf('http://127.0.0.1:9'), /cannot ask the model server at http:\/\/127\.0\.0\.1:9 which GGUF it serves/);
});

test("the loop's learner trains whole samples (up to the policy's episode length) and credits the scaffold's earlier turns as failures", () => {
  const agent = resolveLlmPolicyOptions({ baseUrl: 'http://127.0.0.1:8090/v1', maxEpisodeTokens: 3000 }, {});
  const threads = String(llmThreadShare());
  assert.deepEqual(loopLearnerFlags(agent, ['--epochs', '2']), ['--threads', threads, '--max-sequence-tokens', '3000', '--temperature', '0.7', '--epochs', '2']);
  const scaffold = resolveLlmPolicyOptions({ baseUrl: 'http://127.0.0.1:8090/v1', scaffold: 'repair-script' }, {});
  assert.deepEqual(loopLearnerFlags(scaffold, []), ['--threads', threads, '--max-sequence-tokens', '4096', '--temperature', '0.7', '--earlier-turns-failed']);
});

test("the loop's learner process: an exit while the loop runs is its failure, and one that ignores SIGTERM is killed on stop; both name the log", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-llm-learner-'));
  const launch = llmLearnerLaunch({ gguf: '/m.gguf', runId: 'r1', batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: [] }, { TRIALRUN_CHECKPOINTS: dir });
  try {
    // A "python" that fails at once: the loop sees the failure while it runs, and stop reports it.
    const failing = llmLearnerProcess('/bin/false', launch, join(dir, 'failing.log'));
    await failing.start();
    for (let tries = 0; tries < 100 && failing.failure() === null; tries++) await sleep(50);
    assert.match(String(failing.failure()?.message), /the LLM learner exited with status 1 while the loop ran; its log: .*failing\.log$/);
    await assert.rejects(failing.stop(), ProcessExitError);

    // One that ignores SIGTERM (the fixture prints the pid of a child of its own, which keeps running after it).
    const logFile = join(dir, 'stuck.log');
    const stuck = llmLearnerProcess(checkoutFile('test/fixtures/ignores-sigterm.sh'), launch, logFile, 300);
    await stuck.start();
    const printedPid = (): number => Number.parseInt(readFileSync(logFile, 'utf8'), 10);
    for (let tries = 0; tries < 100 && Number.isNaN(printedPid()); tries++) await sleep(50);
    const grandchild = printedPid();
    try {
      await assert.rejects(stuck.stop(), (error: unknown) => error instanceof ProcessExitError && /status 137 when asked to stop \(killed: still running 0\.3 s after SIGTERM, or by the system\); its log: .*stuck\.log$/.test(error.message));
    } finally {
      if (Number.isInteger(grandchild)) process.kill(grandchild, 'SIGKILL');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
