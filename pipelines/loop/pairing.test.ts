import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { linearRepairKind } from '../../policies/index.js';
import { checkoutRoot, ConfigError, type Task } from '../../schemas/index.js';
import { createRolloutWorker } from '../rollout-worker/index.js';
import type { ProcessorContext } from '../runtime/index.js';
import { runLoop } from './loop.js';

// The refusals come before anything is touched: a context, pool or store that is used would throw.
const unused = new Proxy({}, { get: (_, name) => { throw new Error(`touched ${String(name)}`); } });
const workspaceTask = { taskId: 'ws', envId: 'workspace/v1', files: { 'a.py': '' }, visibleTests: {}, hiddenTests: {} } as unknown as Task;
const mismatch = (error: unknown): boolean => error instanceof ConfigError && /policy linear-repair does not serve environment workspace\/v1: it serves program-repair\/v1/.test(error.message);

test('the loop refuses a policy for tasks of an environment it does not serve, before anything starts', async () => {
  await assert.rejects(
    runLoop(unused as ProcessorContext, { tasks: [workspaceTask], dataDir: '/nonexistent', pool: unused as SandboxPool, imageFor: () => 'x', checkpoints: unused as CheckpointStore, policyId: 'linear-repair' }),
    mismatch,
  );
  await assert.rejects(
    runLoop(unused as ProcessorContext, { tasks: [{ ...workspaceTask, envId: 'nope/v1' }], dataDir: '/nonexistent', pool: unused as SandboxPool, imageFor: () => 'x', checkpoints: unused as CheckpointStore }),
    /unknown environment "nope\/v1"; registered: program-repair\/v1, workspace\/v1/,
  );
});

test('a rollout worker refuses a policy that does not serve an environment it expects', () => {
  const policies = { kind: linearRepairKind, current: () => unused as never };
  assert.throws(() => createRolloutWorker(unused as ProcessorContext, { runId: 'r', pool: unused as SandboxPool, imageFor: () => 'x', policies, envIds: ['workspace/v1'] }), mismatch);
});

test('`run rollout-worker` and `demo` refuse the pair as a user error (exit 2, one line) before the stack is touched', () => {
  for (const args of [['run', 'rollout-worker', '--env', 'workspace/v1'], ['demo', '--env', 'workspace/v1', '--policy', 'onnx-repair']]) {
    const run = spawnSync(process.execPath, [join(checkoutRoot(), 'bin', 'trialrun.js'), ...args], { encoding: 'utf8', env: { ...process.env, KAFKA_BROKERS: '127.0.0.1:1' } });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /^trialrun (run|demo): policy (linear|onnx)-repair does not serve environment workspace\/v1: it serves program-repair\/v1; choose a policy that serves workspace\/v1[^\n]*\n$/);
  }
});
