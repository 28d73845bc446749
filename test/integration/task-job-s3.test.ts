import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { S3BlobStore } from '../../connectors/storage/index.js';
import { resolveJob, runTaskJob } from '../../pipelines/jobs/task-job/index.js';
import { s3Component, stackUp } from '../../stack/index.js';
import { runCli, tempDir } from './harness.js';

/**
 * The task job's outputs and rejects files on S3 (issue 42: "the task job's outputs and rejects files when their
 * destination is s3://"), on the stack's real S3 server: each file is put whole when the job ends, under the name a
 * local file would have, and a destination that does not answer stops the job before it reads a row.
 */
before(() => stackUp((line) => console.log(`# ${line}`), [s3Component()]));

const prefix = (): string => `s3://trialrun/it-task-job-${randomUUID().slice(0, 8)}`;

/** Four good bundle rows, one duplicate and two that fail validation: three rejects. */
function rowsFile(dir: string): string {
  const rows = readFileSync(join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), 'utf8').split('\n').filter(Boolean).slice(0, 4);
  const file = join(dir, 'rows.jsonl');
  writeFileSync(file, [...rows, rows[0], '{"id": "broken"}', 'not json'].join('\n') + '\n');
  return file;
}

/** The JSON Lines object at `uri`, read back through the port with the digest its head records. */
async function objectLines(uri: string): Promise<Array<Record<string, unknown>>> {
  const slash = uri.lastIndexOf('/');
  const store = new S3BlobStore(uri.slice(0, slash));
  try {
    const key = uri.slice(slash + 1);
    const head = await store.head(key);
    assert.ok(head, `${uri} exists`);
    return (await store.get(key, head.sha256!)).toString().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  } finally {
    store.close();
  }
}

test('runTaskJob puts its rejects, tasks and rows files on S3 when they name s3:// destinations', async () => {
  const dir = tempDir('task-job-s3');
  const where = prefix();
  const job = resolveJob({ name: 'it-s3-outputs', importer: 'repair-rows', sources: [{ path: rowsFile(dir) }] }, dir);
  const report = await runTaskJob({ job, rejectsDir: `${where}/rejects`, tasksFile: `${where}/out/tasks.jsonl`, rowsFile: `${where}/out/rows.jsonl`, dryRun: true, jobRunId: 'run-1' });
  assert.equal(report.rejectsFile, `${where}/rejects/run-1.jsonl`);
  assert.equal(report.taskCount, 4);
  const rejects = await objectLines(report.rejectsFile);
  assert.equal(rejects.length, report.rejected);
  assert.deepEqual(rejects.map((reject) => reject.row), [5, 6, 7], 'the duplicate and the two bad rows, sorted by row');
  assert.ok(rejects.every((reject) => typeof reject.reason === 'string' && reject.reason !== ''));
  const tasks = await objectLines(`${where}/out/tasks.jsonl`);
  const rows = await objectLines(`${where}/out/rows.jsonl`);
  assert.deepEqual(tasks.map((task) => task.taskId), report.tasks.map((task) => task.taskId));
  assert.deepEqual(rows.map((row) => row.id), report.rows.map((row) => row.id));
  assert.ok(report.stages.find((stage) => stage.stage === 'build')!.notes.includes(`tasks written to ${where}/out/tasks.jsonl`));
});

test('a job that fails part-way still puts its rejects so far on S3, and says where', async () => {
  const dir = tempDir('task-job-s3-failed');
  const where = prefix();
  const rows = rowsFile(dir);
  const job = resolveJob({ name: 'it-s3-failed', importer: 'repair-rows', sources: [{ path: rows }] }, dir);
  const progress: string[] = [];
  // The tasks file's folder is a file: the build stage fails, after read, validate and dedup turned three rows away.
  await assert.rejects(runTaskJob({ job, rejectsDir: `${where}/rejects`, tasksFile: join(rows, 'tasks.jsonl'), dryRun: true, jobRunId: 'run-failed', onProgress: (line) => progress.push(line) }), /ENOTDIR|EEXIST/);
  const rejects = await objectLines(`${where}/rejects/run-failed.jsonl`);
  assert.deepEqual(rejects.map((reject) => reject.row), [5, 6, 7], 'the duplicate and the two bad rows, as a finished job would have put them');
  assert.ok(progress.includes(`the job failed; its 3 reject(s) so far are in ${where}/rejects/run-failed.jsonl`), progress.join('\n'));
});

test('a rejects destination on a bucket that does not exist stops the job before it reads a row, naming the setting', async () => {
  const dir = tempDir('task-job-s3-missing');
  const job = resolveJob({ name: 'it-s3-missing', importer: 'repair-rows', sources: [{ path: join(dir, 'never-read.jsonl') }] }, dir);
  const missing = `missing-${randomUUID().slice(0, 8)}`;
  await assert.rejects(runTaskJob({ job, rejectsDir: `s3://${missing}/rejects`, dryRun: true }), new RegExp(`bucket "${missing}" does not exist`));
  await assert.rejects(runTaskJob({ job, rejectsDir: dir, rowsFile: 's3://trialrun', dryRun: true }), /rows file \(--out, TaskJobOptions\.rowsFile\): s3:\/\/trialrun names a bucket, not an object/);
});

test('trialrun tasks publish --out s3://... with TRIALRUN_REJECTS=s3://...: both files on S3, nothing under the data folder', async () => {
  const dir = tempDir('task-job-s3-cli');
  const where = prefix();
  const data = tempDir('task-job-s3-cli-data');
  const run = await runCli(['tasks', 'publish', rowsFile(dir), '--dry-run', '--json', '--out', `${where}/rows.jsonl`], { env: { TRIALRUN_REJECTS: `${where}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout) as { rejectsFile: string; rejected: number; taskCount: number };
  assert.match(report.rejectsFile, new RegExp(`^${where}/rejects/[0-9a-f-]+\\.jsonl$`));
  assert.equal((await objectLines(report.rejectsFile)).length, report.rejected);
  assert.equal((await objectLines(`${where}/rows.jsonl`)).length, report.taskCount);
  assert.match(run.stderr, new RegExp(`wrote 4 task row\\(s\\) to ${where}/rows\\.jsonl`));
  assert.equal(existsSync(join(data, 'rejects')), false, 'no local rejects folder');
  const missing = await runCli(['tasks', 'publish', rowsFile(dir), '--dry-run'], { env: { TRIALRUN_REJECTS: `s3://missing-${randomUUID().slice(0, 8)}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /^trialrun tasks: [^\n]*bucket "missing-\w+" does not exist[^\n]*\n$/);
});
