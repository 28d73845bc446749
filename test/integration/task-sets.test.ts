import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { WORKSPACE_ENV } from '../../envs/index.js';
import { readStructuredFile, resolveWorkspaceJob, runWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import { GlobalTable } from '../../pipelines/runtime/index.js';
import { createVerifierProcessor, decideOutputChecks } from '../../pipelines/verifier/index.js';
import type { FileTree, Task, Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { trajectoryFor } from './verifier-fixtures.js';

// The data-processing and document task sets (tasks/data-processing, tasks/documents): one task of each published
// through the task job and verified by the verifier processor, its reference passing and its known-bad variants
// failing; and every document task's checks decided on the host against its reference and its starting files.
const TASKS = join(repoRoot(), 'tasks');
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

/** One task folder of a set's job file, as the task job builds it. */
function jobOf(set: string, folder: string) {
  const raw = readStructuredFile(join(TASKS, set, 'job.yaml'), 'job file') as Record<string, unknown>;
  return resolveWorkspaceJob({ ...raw, folders: [folder] }, join(TASKS, set));
}

const withSolution = (task: Task): FileTree => ({ ...task.files, ...task.referenceSolution });

test('a data task and a document task published through the task job: the references pass, the starting files and a hard-coded output fail', { timeout: 900_000 }, async () => {
  const context = await freshContext('task-sets');
  const trees = new LocalTreeStore(tempDir('task-sets-store'));
  for (const [set, folder] of [['data-processing', 'sales-by-region'], ['documents', 'service-config-json']]) {
    const report = await runWorkspaceJob({ job: jobOf(set!, folder!), rejectsDir: tempDir('task-sets-rejects'), trees, context });
    assert.equal(report.publish?.added, 1, `${set}/${folder}: ${report.rejected} rejected (${report.rejectsFile})`);
  }
  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const data = tasks.get('data-sales-by-region') as Task;
  const document = tasks.get('doc-service-config-json') as Task;
  // The cheat an agent can reach: the output of the sample inputs written down, and a script that does nothing.
  const hardCoded = { ...data.files, 'aggregate.py': 'print("done")\n', 'out/by_region.csv': data.files['examples/by_region.csv']! };
  const finals: Array<[string, Task, FileTree, boolean]> = [
    ['data-reference', data, withSolution(data), true],
    ['data-starting', data, data.files, false],
    ['data-hard-coded', data, hardCoded, false],
    ['doc-reference', document, withSolution(document), true],
    ['doc-starting', document, document.files, false],
  ];
  const verifier = createVerifierProcessor(context, { runId: 'it-task-sets', pool, imageFor, tasks, referenceRuns: 1, timeoutMs: 60_000, trees });
  try {
    await verifier.start();
    const trajectories = finals.map(([name, task, files]) => trajectoryFor(task, files, { groupId: `task-sets/${name}` }));
    await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))));
    let verifications: Verification[] = [];
    await eventually('five verifications', async () => (verifications = await readAll(context, 'verifications')).length >= finals.length, 600_000);
    assert.deepEqual(await readAll(context, 'deadLetters'), []);
    const byGroup = new Map(verifications.map((v) => [v.groupId, v]));
    for (const [name, , , passes] of finals) {
      const verification = byGroup.get(`task-sets/${name}`);
      assert.ok(verification, `no verification of ${name}`);
      assert.equal(verification.passed, passes, `${name}: ${JSON.stringify(verification.tests)} ${verification.failureDetail ?? ''}`);
      assert.deepEqual([verification.checkKind, verification.score, verification.hacks ?? []], ['output', passes ? 1 : 0, []], name);
    }
    // The hidden inputs, not the samples, were graded: the written-down sample output is wrong there.
    assert.match(byGroup.get('task-sets/data-hard-coded')!.tests[0]!.message ?? '', /not among the expected rows|data rows|data row/);
    assert.match(byGroup.get('task-sets/doc-starting')!.tests[0]!.message ?? '', /does not match the schema/);
  } finally {
    await verifier.stop();
    await tasks.close();
  }
});

test('every document task: its checks, decided on the host, pass on the reference and fail on the starting files', { timeout: 300_000 }, async () => {
  const report = await runWorkspaceJob({ job: resolveWorkspaceJob(readStructuredFile(join(TASKS, 'documents', 'job.yaml'), 'job file'), join(TASKS, 'documents')), rejectsDir: tempDir('task-sets-rejects'), trees: new LocalTreeStore(tempDir('task-sets-docs')), dryRun: true });
  assert.equal(report.rejected, 0, report.rejectsFile);
  assert.ok(report.tasks.length >= 10);
  for (const task of report.tasks) {
    assert.equal(task.envId, WORKSPACE_ENV);
    const check = task.verification!.check;
    assert.equal(check.kind, 'output');
    if (check.kind !== 'output') continue;
    const reading = (files: FileTree) => (target: string) => (target in files ? { text: files[target]! } : { problem: `${target} was not produced` });
    const reference = await decideOutputChecks(check.checks, reading(withSolution(task)), task.hiddenTests);
    assert.deepEqual(reference.filter((r) => r.outcome !== 'passed').map((r) => [r.id, r.message]), [], task.taskId);
    const starting = await decideOutputChecks(check.checks, reading(task.files), task.hiddenTests);
    assert.ok(starting.some((r) => r.outcome === 'failed'), `${task.taskId}: the starting files pass every check`);
  }
});
