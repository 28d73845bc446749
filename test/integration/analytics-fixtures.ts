import { Reward, Trajectory, Verification } from '../../schemas/index.js';

/** Shared by the analytics tests and `npm run bench:analytics`: contract-valid records of a realistic shape, made without a sandbox. */
export interface SyntheticOptions {
  /** @default 'synthetic-run' */
  runId?: string;
  /** Steps per trajectory. @default 10 */
  steps?: number;
  /** Trajectories per policy version. @default 1000 */
  perVersion?: number;
  /** Start of the event times. @default 2025-01-01T00:00:00Z */
  startMs?: number;
  /** Event time between one trajectory and the next. @default 1000 */
  intervalMs?: number;
  /** Features per candidate action in each decision (match the policy a learner trains). @default 8 */
  features?: number;
  /** Distinct tasks, taken in turn (trajectory i plays task i mod tasks). @default 50 */
  tasks?: number;
}

const TOOLS = ['run_tests', 'read_file', 'apply_edit', 'revert', 'submit'] as const;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The i-th trajectory of a synthetic run: deterministic, so tests can predict every column. */
export function syntheticTrajectory(i: number, options: SyntheticOptions = {}): Trajectory {
  const runId = options.runId ?? 'synthetic-run';
  const stepCount = options.steps ?? 10;
  const startMs = (options.startMs ?? Date.parse('2025-01-01T00:00:00Z')) + i * (options.intervalMs ?? 1000);
  const taskId = `task-${String(i % (options.tasks ?? 50)).padStart(3, '0')}`;
  const steps = Array.from({ length: stepCount }, (_, s) => ({
    index: s,
    observation: `pytest: ${s} failed, ${stepCount - s} passed\nE   assert f(${i}) == ${s}\n`.repeat(4),
    toolCall: { name: TOOLS[(i + s) % TOOLS.length]!, arguments: { path: 'module.py', edit: s } },
    toolResult: { ok: (i + s) % 3 !== 0, output: `output of step ${s} of trajectory ${i}\n`.repeat(8), truncated: false, exitCode: (i + s) % 3 === 0 ? 1 : 0 },
    decision: s % 2 === 0 ? { features: Array.from({ length: 6 }, (_, c) => Array.from({ length: options.features ?? 8 }, (_, f) => ((c + 1) * (f + 1 + (i % 3))) / 20)), chosen: s % 6, logprob: -1.25 } : null,
    startedAt: iso(startMs + s * 10),
    durationMs: 5 + (s % 4),
    sandboxMs: 3 + (s % 3),
  }));
  // Parsed, so fields the contract defaults are filled in.
  return Trajectory.parse({
    trajectoryId: `${runId}/t${i}`,
    groupId: `${runId}/g${Math.floor(i / 4)}`,
    groupSize: 4,
    envId: 'program-repair/v1',
    policyId: 'linear-repair',
    steps,
    finalFiles: { 'module.py': `def f(x):\n    return x + ${i % 7}\n`.repeat(10) },
    outcome: i % 10 === 0 ? 'max-turns' : 'submitted',
    error: null,
    totalMs: stepCount * 8,
    sandboxMs: stepCount * 4,
    lineage: {
      taskId,
      attempt: i % 4,
      runId,
      policyVersion: Math.floor(i / (options.perVersion ?? 1000)),
      sandboxImageDigest: 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
      verifierVersion: null,
      createdAt: iso(startMs),
    },
  });
}

/** Whether the i-th synthetic trajectory passes: more often under later policy versions, so there is a learning curve to see. */
export function syntheticPassed(i: number, options: SyntheticOptions = {}): boolean {
  const version = Math.floor(i / (options.perVersion ?? 1000));
  return (i * 7919) % 100 < 20 + 10 * version;
}

export function syntheticVerification(i: number, options: SyntheticOptions = {}): Verification {
  const trajectory = syntheticTrajectory(i, { ...options, steps: 0 });
  const passed = syntheticPassed(i, options);
  // Parsed, so fields the contract defaults are filled in.
  return Verification.parse({
    verificationId: `${trajectory.trajectoryId}/v-synthetic`,
    trajectoryId: trajectory.trajectoryId,
    groupId: trajectory.groupId,
    groupSize: trajectory.groupSize,
    passed,
    tests: [
      { id: 'test_hidden.py::test_a', outcome: 'passed', durationMs: 1, message: null },
      { id: 'test_hidden.py::test_b', outcome: passed ? 'passed' : 'failed', durationMs: 2, message: passed ? null : 'assert 1 == 2' },
    ],
    testsPassed: passed ? 2 : 1,
    testsTotal: 2,
    fractionPassed: passed ? 1 : 0.5,
    failure: null,
    durationMs: 120,
    lineage: { ...trajectory.lineage, verifierVersion: 'v-synthetic0000' },
  });
}

export function syntheticReward(i: number, options: SyntheticOptions = {}): Reward {
  const verification = syntheticVerification(i, options);
  const reward = verification.passed ? 1 : 0;
  return Reward.parse({
    rewardId: `${verification.verificationId}/reward`,
    trajectoryId: verification.trajectoryId,
    verificationId: verification.verificationId,
    groupId: verification.groupId,
    reward,
    advantage: reward - 0.5,
    groupMean: 0.5,
    groupStd: 0.5,
    groupSize: 4,
    lineage: verification.lineage,
  });
}
