import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExecOptions, ExecResult, Sandbox, SandboxPool } from '../../../connectors/sandbox/index.js';
import { ConfigError } from '../../../schemas/index.js';
import { deriveMutants, type DeriveOptions, type Problem } from './derive.js';

/** A sandbox pool that answers the driver without running it; a batch holding a `bomb` problem dies of OOM, as a memory bomb would take its sandbox. */
function fakePool(batches: string[][]): SandboxPool {
  const sandbox: Sandbox = {
    id: 'fake',
    imageDigest: 'sha256:fake',
    writeFiles: async () => undefined,
    readFiles: async () => ({}),
    readFile: async () => '',
    snapshot: async () => assert.fail('derivation never snapshots a workspace'),
    forward: async () => {
      throw new Error('no forwarding in this test');
    },
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

/** A derivation of one candidate per problem on the fake pool, logging each batch it sends. */
const options = (batches: string[][], shape: Pick<DeriveOptions, 'sandboxes' | 'problemsPerSandbox' | 'retries'>): DeriveOptions => ({
  pool: fakePool(batches),
  image: 'fake',
  runId: 'test',
  kinds: ['arith-op'],
  perProblem: 1,
  maxCandidates: 1,
  runs: 1,
  timeoutMs: 1000,
  seed: 's',
  ...shape,
});

describe('deriveMutants', () => {
  it('splits a batch whose sandbox dies, so only the problem that kills it alone is rejected', async () => {
    const batches: string[][] = [];
    const results = await deriveMutants(['a', 'bomb', 'c', 'd', 'e'].map(problem), options(batches, { sandboxes: 1, problemsPerSandbox: 3, retries: 0 }));
    assert.deepEqual(results.map((result) => [result.key, result.status]), [['a', 'ok'], ['bomb', 'rejected'], ['c', 'ok'], ['d', 'ok'], ['e', 'ok']]);
    assert.match(results[1]!.reason!, /^the validation sandbox ended by oom: Killed \(after 1 tries\)/);
    assert.deepEqual(batches, [['a', 'bomb', 'c'], ['a'], ['bomb'], ['c'], ['d', 'e']]);
  });

  it('tries a failed sandbox again (the shared retry loop) before splitting its batch, and says how many tries a rejection took', async () => {
    const batches: string[][] = [];
    const results = await deriveMutants(['a', 'bomb'].map(problem), options(batches, { sandboxes: 2, problemsPerSandbox: 2, retries: 1 }));
    assert.deepEqual(results.map((result) => [result.key, result.status]), [['a', 'ok'], ['bomb', 'rejected']]);
    assert.match(results[1]!.reason!, /^the validation sandbox ended by oom: Killed \(after 2 tries\)/);
    // The batch twice, then each problem alone: the bomb with its own one retry.
    assert.deepEqual(batches, [['a', 'bomb'], ['a', 'bomb'], ['a'], ['bomb'], ['bomb']]);
  });

  it('refuses bad options with a ConfigError naming the option', async () => {
    await assert.rejects(deriveMutants([], { ...options([], { sandboxes: 0, problemsPerSandbox: 1 }) }), (error: unknown) => error instanceof ConfigError && error.message === 'DeriveOptions.sandboxes must be a whole number >= 1, got 0');
    await assert.rejects(deriveMutants([], { ...options([], { sandboxes: 1, problemsPerSandbox: 1 }), kinds: [] }), (error: unknown) => error instanceof ConfigError && /^DeriveOptions.kinds must be a list of at least one mutation kind, got \[\]$/.test(error.message));
  });
});
