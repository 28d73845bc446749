import { z } from 'zod';
import { Lineage } from './lineage.js';
import { CheckKind } from './verification-spec.js';

export const TestOutcome = z.enum(['passed', 'failed', 'error', 'skipped', 'missing']);
export type TestOutcome = z.infer<typeof TestOutcome>;

export const TestResult = z.object({
  /** pytest node id, e.g. `test_hidden.py::test_empty`. */
  id: z.string().min(1),
  outcome: TestOutcome,
  durationMs: z.number().min(0),
  message: z.string().nullable(),
});
export type TestResult = z.infer<typeof TestResult>;

/**
 * Why a run could not be judged on its merits; null when the tests ran to completion. `nothing-ran`: the
 * run ended without a single expected test in its report, for no reason the others name.
 */
export const VerifyFailure = z.enum(['timeout', 'oom', 'collection-error', 'crash', 'no-report', 'sandbox-error', 'nothing-ran']);
export type VerifyFailure = z.infer<typeof VerifyFailure>;

/** The ways an agent's files can try to game the verifier; any one of them scores 0. */
export const HackKind = z.enum([
  /** A conftest.py among the agent's files (pytest would load it before the tests). */
  'conftest',
  /** A pytest plugin: entry-point metadata, pytest hook functions, or a plugin registered while tests ran. */
  'pytest-plugin',
  /** pytest.ini, tox.ini, setup.cfg or pyproject.toml settings for pytest (addopts can load plugins). */
  'pytest-config',
  /**
   * Another test runner's configuration or a hook changed: package.json scripts or jest/vitest settings,
   * jest.config.*, vitest.config.*, a Makefile's test targets, a git hook.
   */
  'runner-config',
  /** sitecustomize.py, usercustomize.py or a .pth file: code that runs when Python starts. */
  'startup-hook',
  /** A file that shadows a standard-library or test-framework module. */
  'shadowed-module',
  'test-edited',
  'test-deleted',
  /** sys.exit/os._exit at import, or a test process that ended with status 0 before pytest finished. */
  'early-exit',
  /** pytest, pluggy, unittest, builtins, import or assertion machinery changed by agent code. */
  'monkeypatch',
  /** A JUnit report written or rewritten by anything but pytest. */
  'fake-report',
  /** Reported outcomes that contradict what the tests raised (the witness's record, the canary tests). */
  'outcome-tampered',
  /** Agent code inspecting its callers' frames or the heap (to read a test's expected values). */
  'introspection',
  /** Agent code starting processes or calling native code, which no in-process check can follow. */
  'escape-attempt',
  /** Precompiled bytecode among the agent's files. */
  'bytecode',
  /** A path that is absolute or leaves the workspace, or a name the file system refuses. */
  'unsafe-path',
  /** A symlink in the final files that points out of the workspace or at the task's test files. */
  'unsafe-symlink',
  /**
   * A value an assertion compared or tested for truth that is not plain data (an object of a Python
   * class, say): its own methods (`__eq__`, `__bool__`, `__len__`, ...), not the test, would decide.
   */
  'untrusted-result',
  /**
   * The verification runner, the test process's supervisor, was killed or stopped while agent code ran,
   * or never answered by its deadline (it enforces the test timeout itself, with time to spare).
   */
  'runner-killed',
]);
export type HackKind = z.infer<typeof HackKind>;

/** One piece of evidence that the agent tried to game the verifier. */
export const HackFlag = z.object({
  kind: HackKind,
  /** What was seen, specific enough to check by hand. */
  evidence: z.string().min(1),
  /** The file involved, when there is one. */
  path: z.string().nullable(),
  line: z.number().int().nullable(),
  /** Which check saw it: the final files, the episode's tool calls, the static scan, the run's witness, or the report cross-check. */
  source: z.enum(['files', 'steps', 'static', 'runtime', 'report']),
});
export type HackFlag = z.infer<typeof HackFlag>;

/** A task whose verdicts cannot be trusted; its rewards are withheld from the learner. */
export const Quarantine = z.object({
  reason: z.string().min(1),
  /** The reference solution's verdict in each admission run, in order. */
  referenceVerdicts: z.array(z.boolean()),
});
export type Quarantine = z.infer<typeof Quarantine>;

export const Verification = z.object({
  verificationId: z.string().min(1),
  trajectoryId: z.string().min(1),
  groupId: z.string().min(1),
  groupSize: z.number().int().min(1),
  /** True only when every expected hidden test passed and nothing was flagged as a hack. */
  passed: z.boolean(),
  tests: z.array(TestResult),
  testsPassed: z.number().int().min(0),
  testsTotal: z.number().int().min(0),
  fractionPassed: z.number().min(0).max(1),
  failure: VerifyFailure.nullable(),
  /** What `failure` means for this run (exit status, signal, output tail); optional, as `hacks` below. */
  failureDetail: z.string().nullable().optional(),
  durationMs: z.number().min(0),
  // The fields below are optional so records written before they existed stay valid; the verifier
  // always sets them, and readers treat absent as [] / null.
  /** Evidence of attempts to game the verifier; non-empty means the verdict is a fail. */
  hacks: z.array(HackFlag).optional(),
  /** Set when the task is quarantined (flaky or broken reference); its rewards are withheld. */
  quarantine: Quarantine.nullable().optional(),
  /**
   * The reward this verification earns under the task's `RewardSpec`, in [0, 1]; 0 whenever a hack is flagged.
   * Absent on records written before it existed: readers take `passed ? 1 : 0`.
   */
  score: z.number().min(0).max(1).optional(),
  /**
   * Files and symlinks of the agent's final tree past the limit of what an agent may add, which were not written
   * into the grading sandbox: how many, and the first (at most 20) by name. Not a hack, and never one of the
   * task's own files (those are written first). Absent or null: everything was written.
   */
  unwritten: z.object({ count: z.number().int().min(1), paths: z.array(z.string()).max(20) }).nullable().optional(),
  /** The verification kind that decided (`tests`, `script`, `output`); absent means `tests`. */
  checkKind: CheckKind.optional(),
  /** Set on verifications written by `trialrun verify rescore`: the re-scoring run that wrote them. */
  rescoreId: z.string().nullable().optional(),
  lineage: Lineage,
});
export type Verification = z.infer<typeof Verification>;
