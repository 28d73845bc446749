import { z } from 'zod';
import { Lineage } from './lineage.js';

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

/** Why a run could not be judged on its merits; null when the tests ran to completion. */
export const VerifyFailure = z.enum(['timeout', 'oom', 'collection-error', 'crash', 'no-report', 'sandbox-error']);
export type VerifyFailure = z.infer<typeof VerifyFailure>;

export const Verification = z.object({
  verificationId: z.string().min(1),
  trajectoryId: z.string().min(1),
  groupId: z.string().min(1),
  groupSize: z.number().int().min(1),
  /** True only when every expected hidden test passed. */
  passed: z.boolean(),
  tests: z.array(TestResult),
  testsPassed: z.number().int().min(0),
  testsTotal: z.number().int().min(0),
  fractionPassed: z.number().min(0).max(1),
  failure: VerifyFailure.nullable(),
  durationMs: z.number().min(0),
  lineage: Lineage,
});
export type Verification = z.infer<typeof Verification>;
