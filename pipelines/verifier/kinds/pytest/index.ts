import { SandboxError, type Task, type TestsVerification } from '../../../../schemas/index.js';
import { plantCanaries } from '../../canary.js';
import { describeCollectError, judge, withOutput } from '../../judge.js';
import type { GradingSandboxes } from '../../sandboxes.js';
import { testModules } from '../../sandboxes.js';
import { taskTestFiles } from '../../screening.js';
import type { ExpectedIds, VerificationKind } from '../kind.js';

/** A `tests` check run by the hardened pytest runner (its `command` and `junitPath` are ignored). */
export type PytestCheck = TestsVerification & { runner: 'pytest' };

/**
 * `tests` with runner `pytest`, program repair's check: a trusted runner inspects the agent's Python without
 * importing it, runs pytest with a witness plugin and canary tests, and kills whatever the run leaves behind;
 * the verdict comes from pytest's JUnit report checked against the witness and against the test ids expected of
 * the pristine task (the spec's FAIL_TO_PASS and PASS_TO_PASS lists, else every collected test, visible and
 * hidden: calibration found hidden suites that miss behaviour the visible tests pin down).
 */
export const PYTEST_KIND: VerificationKind<PytestCheck> = {
  name: 'pytest',
  owns: (check): check is PytestCheck => check.kind === 'tests' && check.runner === 'pytest',
  problem: () => null,
  // Without a hidden test the verdict would rest on tests the agent has seen: a task with none is broken.
  idsRequired: true,

  /**
   * The spec's FAIL_TO_PASS and PASS_TO_PASS ids, each of which must be collected from the pristine task, or
   * without lists every test collected, of which some must be hidden.
   */
  async expectedIds({ task, check, sandboxes, timeoutMs, signal }): Promise<ExpectedIds> {
    const collected = await collectIds(task, sandboxes, check.timeoutMs ?? timeoutMs, signal);
    const listed = [...new Set([...check.failToPass, ...check.passToPass])];
    if (listed.length === 0 || collected.ids.length === 0) return collected;
    const found = new Set(collected.ids);
    const absent = listed.filter((id) => !found.has(id));
    if (absent.length > 0) {
      return { ids: [], problem: `the spec lists ${absent.length} test id(s) the pristine task does not have: ${absent.slice(0, 5).join(', ')}; collected ${collected.ids.slice(0, 5).join(', ')}${collected.ids.length > 5 ? ', ...' : ''}` };
    }
    return { ids: listed, problem: collected.problem };
  },

  async check({ task, check, sandboxes, timeoutMs, signal }, agent, flags, expected) {
    const planted = plantCanaries(task.hiddenTests);
    const run = await sandboxes.run(task, agent, planted.files, 'verify', check.timeoutMs ?? timeoutMs, signal);
    const judged = judge({ expected, canaries: planted.canaries, run: run.result, screened: flags, modules: testModules(taskTestFiles(task)) });
    return {
      judgement: { ...judged, testsTotal: expected.length, fraction: expected.length ? judged.testsPassed / expected.length : 0 },
      runnerFailure: run.result.runnerFailure ?? null,
      imageDigest: run.imageDigest,
    };
  },
};

/** The test ids of the pristine task, visible and hidden (collected with the reference solution, else the starting files). */
export async function collectIds(task: Task, sandboxes: GradingSandboxes, timeoutMs: number, signal: AbortSignal): Promise<ExpectedIds> {
  const pristine = { files: { ...task.files, ...(task.referenceSolution ?? {}) }, rawNamedFiles: [], symlinks: [], flags: [], unwritten: null };
  const { result } = await sandboxes.run(task, pristine, task.hiddenTests, 'collect', timeoutMs, signal);
  // The pristine task runs no agent code: a runner that fails here is infrastructure, retried, never a verdict on the task.
  if (result.runnerFailure !== undefined) throw new SandboxError(`collecting the tests of ${task.taskId} failed: ${result.runnerFailure.evidence}`, { retriable: true });
  if (result.setupError !== undefined) return { ids: [], problem: `setting up the collection failed: ${result.setupError}` };
  const collected = result.witness.find((e) => e.event === 'collected');
  const ids = Array.isArray(collected?.items) ? collected.items.filter((id): id is string => typeof id === 'string') : [];
  const errors = result.witness.filter((e) => e.event === 'collect-error').map(describeCollectError);
  const hidden = new Set(Object.keys(task.hiddenTests));
  if (!ids.some((id) => hidden.has(id.split('::')[0]!))) {
    return { ids: [], problem: withOutput(`collecting the hidden tests found none${errors.length ? ` (${errors.join('; ')})` : ''}`, result.output.slice(-300)) };
  }
  return { ids, problem: errors.length ? `collection errors: ${errors.join('; ')}` : null };
}
