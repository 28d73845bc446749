import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExecOptions, ExecResult, Sandbox, SandboxPool } from '../../../connectors/sandbox/index.js';
import { deriveMutants, type Problem } from './derive.js';

/** A sandbox pool that answers the driver without running it; a batch holding a `bomb` problem dies of OOM, as a memory bomb would take its sandbox. */
function fakePool(batches: string[][]): SandboxPool {
  const sandbox: Sandbox = {
    id: 'fake',
    imageDigest: 'sha256:fake',
    writeFiles: async () => undefined,
    readFiles: async () => ({}),
    readFile: async () => '',
    snapshot: async () => assert.fail('derivation never snapshots a workspace'),
    release: async () => undefined,
    exec: async (_command: readonly string[], options?: ExecOptions): Promise<ExecResult> => {
      const request = JSON.parse(String(options?.stdin)) as { problems: Array<{ key: string }> };
      const keys = request.problems.map((problem) => problem.key);
      batches.push(keys);
      if (keys.some((key) => key.startsWith('bomb'))) return { status: 'oom', exitCode: 137, stdout: '', stderr: 'Killed', truncated: false, durationMs: 1 };
      const problems = keys.map((key) => ({ key, status: 'ok', reason: null, candidates: 0, mutants: [] }));
      return { status: 'exited', exitCode: 0, stdout: JSON.stringify({ problems }), stderr: '', truncated: false, durationMs: 1 };
    },
  };
  return { acquire: async () => sandbox, close: async () => undefined } as unknown as SandboxPool;
}

const problem = (key: string): Problem => ({ key, module: 'm.py', source: 'x = 1\n', visibleTests: 'def test_a():\n    pass\n', hiddenTests: 'def test_b():\n    pass\n' });

describe('deriveMutants', () => {
  it('splits a batch whose sandbox dies, so only the problem that kills it alone is rejected', async () => {
    const batches: string[][] = [];
    const results = await deriveMutants(['a', 'bomb', 'c', 'd', 'e'].map(problem), {
      pool: fakePool(batches),
      image: 'fake',
      runId: 'test',
      kinds: ['arith-op'],
      perProblem: 1,
      maxCandidates: 1,
      runs: 1,
      timeoutMs: 1000,
      sandboxes: 1,
      problemsPerSandbox: 3,
      seed: 's',
      retries: 0,
    });
    assert.deepEqual(results.map((result) => [result.key, result.status]), [['a', 'ok'], ['bomb', 'rejected'], ['c', 'ok'], ['d', 'ok'], ['e', 'ok']]);
    assert.match(results[1]!.reason!, /^the validation sandbox ended by oom: Killed \(after 1 tries\)/);
    assert.deepEqual(batches, [['a', 'bomb', 'c'], ['a'], ['bomb'], ['c'], ['d', 'e']]);
  });
});

describe('deriveMutants retries', () => {
  it('tries a failed sandbox again (the shared retry loop) before splitting its batch, and says how many tries a rejection took', async () => {
    const batches: string[][] = [];
    const results = await deriveMutants(['a', 'bomb'].map(problem), {
      pool: fakePool(batches),
      image: 'fake',
      runId: 'test',
      kinds: ['arith-op'],
      perProblem: 1,
      maxCandidates: 1,
      runs: 1,
      timeoutMs: 1000,
      sandboxes: 2,
      problemsPerSandbox: 2,
      seed: 's',
      retries: 1,
    });
    assert.deepEqual(results.map((result) => [result.key, result.status]), [['a', 'ok'], ['bomb', 'rejected']]);
    assert.match(results[1]!.reason!, /^the validation sandbox ended by oom: Killed \(after 2 tries\)/);
    // The batch twice, then each problem alone: the bomb with its own one retry.
    assert.deepEqual(batches, [['a', 'bomb'], ['a', 'bomb'], ['a'], ['bomb'], ['bomb']]);
  });
});
