import { createHash, randomUUID } from 'node:crypto';
import type { Sandbox, SandboxPool } from '../../connectors/sandbox/index.js';
import { nowIso, SandboxError, type Task, type TestResult, type Trajectory, type Verification, type VerifyFailure } from '../../schemas/index.js';
import { StreamProcessor, type GlobalTable, type ProcessorContext } from '../runtime/index.js';
import { parseJunit } from './junit.js';

/** Everything that decides a verdict; its hash (with the image digest) is the verifier version. */
export const VERIFIER_SPEC = {
  recipe: 'python-repair',
  pytest: ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider'],
  timeoutMs: 20_000,
  rule: 'reward 1 iff every expected hidden test passed in a JUnit report',
} as const;

export function verifierVersion(imageDigest: string): string {
  return `v-${createHash('sha256').update(JSON.stringify([VERIFIER_SPEC, imageDigest])).digest('hex').slice(0, 12)}`;
}

export interface VerifierOptions {
  runId: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  tasks: GlobalTable<'tasks'>;
  /** @default '0' */
  instanceId?: string;
}

interface RunOutcome {
  readonly tests: TestResult[];
  readonly failure: VerifyFailure | null;
  readonly imageDigest: string;
}

/**
 * Scores a trajectory by running the task's hidden tests against the agent's final files in a fresh
 * sandbox that the agent never touched. The verdict comes from pytest's JUnit report checked against the
 * test ids collected from the pristine task: a missing, skipped or erroring test counts as failed, so a
 * run that collects nothing or dies early never scores.
 */
export class Verifier {
  private readonly expected = new Map<string, Promise<string[]>>();

  constructor(private readonly options: VerifierOptions) {}

  async verify(trajectory: Trajectory, signal: AbortSignal): Promise<Verification> {
    const started = performance.now();
    const task = this.options.tasks.get(trajectory.lineage.taskId);
    const expected = await this.expectedTests(task, signal);
    const run = await this.runHiddenTests(task, trajectory.finalFiles, signal);
    const byId = new Map(run.tests.map((test) => [test.id, test]));
    const tests: TestResult[] = expected.map((id) => byId.get(id) ?? { id, outcome: 'missing', durationMs: 0, message: 'not in the report' });
    const testsPassed = tests.filter((test) => test.outcome === 'passed').length;
    const failure = run.failure ?? (expected.length === 0 ? 'collection-error' : null);
    return {
      verificationId: `${trajectory.trajectoryId}/${verifierVersion(run.imageDigest)}`,
      trajectoryId: trajectory.trajectoryId,
      groupId: trajectory.groupId,
      groupSize: trajectory.groupSize,
      passed: failure === null && testsPassed === expected.length && expected.length > 0,
      tests,
      testsPassed,
      testsTotal: expected.length,
      fractionPassed: expected.length ? testsPassed / expected.length : 0,
      failure,
      durationMs: performance.now() - started,
      lineage: { ...trajectory.lineage, verifierVersion: verifierVersion(run.imageDigest), createdAt: nowIso() },
    };
  }

  /** Test ids of the pristine task (reference solution and hidden tests), collected once per task. */
  private expectedTests(task: Task, signal: AbortSignal): Promise<string[]> {
    let ids = this.expected.get(task.taskId);
    if (!ids) {
      ids = this.withSandbox(task, async (sandbox) => {
        await sandbox.writeFiles({ ...task.files, ...(task.referenceSolution ?? {}), ...task.hiddenTests });
        const exec = await sandbox.exec([...VERIFIER_SPEC.pytest, '--collect-only', ...Object.keys(task.hiddenTests)], { timeoutMs: VERIFIER_SPEC.timeoutMs, signal });
        const found = exec.stdout.split('\n').filter((line) => /^\S+\.py::\S/.test(line)).map((line) => line.trim());
        if (found.length === 0) throw new SandboxError(`collecting the hidden tests of ${task.taskId} found none: ${exec.stdout.slice(-300)}${exec.stderr.slice(-300)}`);
        return found;
      });
      ids.catch(() => this.expected.delete(task.taskId));
      this.expected.set(task.taskId, ids);
    }
    return ids;
  }

  private async runHiddenTests(task: Task, finalFiles: Trajectory['finalFiles'], signal: AbortSignal): Promise<RunOutcome> {
    return this.withSandbox(task, async (sandbox) => {
      // The pristine tests are written last, so the agent's copies of them can never win.
      await sandbox.writeFiles({ ...finalFiles, ...task.visibleTests, ...task.hiddenTests });
      const reportDir = `verify-${randomUUID()}`;
      const exec = await sandbox.exec([...VERIFIER_SPEC.pytest, `--junitxml=/tmp/${reportDir}/report.xml`, ...Object.keys(task.hiddenTests)], {
        timeoutMs: VERIFIER_SPEC.timeoutMs,
        signal,
      });
      const base = { imageDigest: sandbox.imageDigest };
      if (exec.status === 'timeout') return { ...base, tests: [], failure: 'timeout' };
      if (exec.status === 'oom') return { ...base, tests: [], failure: 'oom' };
      const report = await sandbox.readFiles(['report.xml'], `/tmp/${reportDir}`).catch(() => null);
      const cases = report ? parseJunit(report['report.xml'] ?? '') : null;
      if (cases === null) return { ...base, tests: [], failure: exec.exitCode === 2 || exec.exitCode === 4 ? 'collection-error' : 'no-report' };
      return { ...base, tests: cases, failure: exec.exitCode === 2 || exec.exitCode === 3 ? 'crash' : null };
    });
  }

  private async withSandbox<T>(task: Task, use: (sandbox: Sandbox) => Promise<T>): Promise<T> {
    const sandbox = await this.options.pool.acquire({ image: this.options.imageFor(VERIFIER_SPEC.recipe), runId: this.options.runId, taskId: task.taskId });
    try {
      return await use(sandbox);
    } finally {
      await sandbox.release();
    }
  }
}

export function createVerifierProcessor(context: ProcessorContext, options: VerifierOptions): StreamProcessor<'trajectories'> {
  const verifier = new Verifier(options);
  return new StreamProcessor(
    context,
    { name: 'verifier', inputs: ['trajectories'], instanceId: options.instanceId ?? '0', maxRecordsPerTransaction: 4, timeoutMs: 180_000 },
    async ({ record, signal }) => {
      const verification = await verifier.verify(record.value, signal);
      return [{ topic: 'verifications', key: verification.groupId, value: verification }];
    },
  );
}
