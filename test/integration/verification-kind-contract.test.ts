import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { VERIFICATION_KINDS, Verifier } from '../../pipelines/verifier/index.js';
import { NotFoundError, VerificationSpec, type FileTree, type Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack } from './harness.js';
import { bundledTasks, trajectoryFor } from './verifier-fixtures.js';

/**
 * The contract every registered verification kind keeps, in real grading sandboxes with real grading (one
 * suite, one case per kind). A case is a folder under test/fixtures/verification-kinds/<kind>/: `spec.json` (the
 * task's VerificationSpec), `files/` (the starting files, which must fail), `hidden/` (what never enters an
 * agent's sandbox) and `reference/` (the solution, which must pass). A kind with no case fails the suite.
 */
const CASES_DIR = join(repoRoot(), 'test', 'fixtures', 'verification-kinds');

/** Files a case takes from elsewhere in the checkout, so a fixture lives in one place. */
const SHARED_HIDDEN: Record<string, FileTree> = {
  command: { 'grading/unittest_junit.py': readFileSync(join(repoRoot(), 'test', 'fixtures', 'unittest_junit.py'), 'utf8') },
};

function readTree(dir: string): FileTree {
  const tree: FileTree = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, name);
    if (statSync(path).isFile()) tree[name.split('\\').join('/')] = readFileSync(path, 'utf8');
  }
  return tree;
}

const base = (await bundledTasks(1))[0]!;

function caseTask(kind: string): Task {
  const dir = join(CASES_DIR, kind);
  const verification = VerificationSpec.parse(JSON.parse(readFileSync(join(dir, 'spec.json'), 'utf8')));
  return { ...base, taskId: `contract-${kind}`, title: `contract-${kind}`, files: readTree(join(dir, 'files')), visibleTests: {}, hiddenTests: { ...readTree(join(dir, 'hidden')), ...SHARED_HIDDEN[kind] }, referenceSolution: readTree(join(dir, 'reference')), verification };
}

test('every registered verification kind has a contract case, and every case a registered kind', () => {
  assert.deepEqual(readdirSync(CASES_DIR).sort(), VERIFICATION_KINDS.names().sort());
});

const pool = new DockerSandboxPool();
const signal = new AbortController().signal;
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

for (const name of VERIFICATION_KINDS.names()) {
  describe(`VerificationKind contract (${name})`, () => {
    const task = caseTask(name);
    const verifier = new Verifier({ runId: `contract-${name}`, pool, imageFor, tasks: { get: (id) => (id === task.taskId ? task : (() => { throw new NotFoundError(id); })()) }, referenceRuns: 2, timeoutMs: 15_000 });
    const reference = { ...task.files, ...task.referenceSolution };
    const kind = VERIFICATION_KINDS.get(name);

    it('owns its case\'s check, alone, and finds nothing missing in it', () => {
      const check = task.verification!.check;
      assert.equal(VERIFICATION_KINDS.of(check), kind);
      assert.equal(kind.problem(check), null);
    });

    it('judges the pristine task on ids it can have, and admits it after two reference runs that pass', { timeout: 300_000 }, async () => {
      const ids = await verifier.expectedIds(task, signal);
      assert.equal(ids.problem, null);
      assert.ok(ids.ids.length > 0, 'at least one id to judge');
      const admission = await verifier.admit(task, signal);
      assert.deepEqual(admission, { expected: ids.ids, quarantine: null });
    });

    it('passes the reference: every expected id judged and passed, score 1, no runner failure', { timeout: 300_000 }, async () => {
      const { expected } = await verifier.admit(task, signal);
      const checked = await verifier.check(task, reference, expected, signal);
      assert.deepEqual([checked.passed, checked.score, checked.fraction, checked.failure, checked.runnerFailure, checked.hacks], [true, 1, 1, null, null, []], JSON.stringify(checked.tests));
      assert.deepEqual(checked.tests.map((t) => t.id).sort(), [...expected].sort());
      assert.equal(checked.testsTotal, expected.length);
      assert.equal(checked.checkKind, task.verification!.check.kind);
      assert.match(checked.imageDigest, /^sha256:/);
    });

    it('fails the starting files: not passed, score 0, some expected id not passed', { timeout: 300_000 }, async () => {
      const { expected } = await verifier.admit(task, signal);
      const checked = await verifier.check(task, task.files, expected, signal);
      assert.deepEqual([checked.passed, checked.score, checked.runnerFailure], [false, 0, null]);
      assert.ok(checked.tests.some((t) => expected.includes(t.id) && t.outcome !== 'passed'), JSON.stringify(checked.tests));
    });

    it('scores a flagged tree 0 whatever its check says: a conftest.py beside the reference', { timeout: 300_000 }, async () => {
      const { expected } = await verifier.admit(task, signal);
      const checked = await verifier.check(task, { ...reference, 'conftest.py': 'import sys\n' }, expected, signal);
      assert.deepEqual([checked.passed, checked.score], [false, 0]);
      assert.deepEqual(checked.hacks.map((h) => [h.kind, h.path]), [['conftest', 'conftest.py']]);
    });

    it('verifies a trajectory end to end: the kind, the verifier version and the image stamped on it', { timeout: 300_000 }, async () => {
      const verification = await verifier.verify(trajectoryFor(task, reference), signal);
      assert.deepEqual([verification.passed, verification.score, verification.checkKind, verification.quarantine], [true, 1, task.verification!.check.kind, null]);
      assert.match(verification.lineage.verifierVersion ?? '', /^v-[0-9a-f]{12}$/);
      assert.equal(verification.verificationId, `${verification.trajectoryId}/${verification.lineage.verifierVersion}`);
    });
  });
}
