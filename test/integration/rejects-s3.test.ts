import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { S3BlobStore } from '../../connectors/storage/index.js';
import { s3Component, stackUp } from '../../stack/index.js';
import { runCli, tempDir } from './harness.js';

/**
 * The commands that write a rejects file of their own (`import atif`) or through a task job (`ceiling`, `demo`'s
 * task preparation) take TRIALRUN_REJECTS=s3://... (issue 42: nothing a user needs to see stays on one machine), on
 * the stack's real S3 server, each under a prefix of its own; a bucket that does not exist is one line before
 * anything is read.
 */
before(() => stackUp((line) => console.log(`# ${line}`), [s3Component()]));

const prefix = (label: string): string => `s3://trialrun/it-rejects-${label}-${randomUUID().slice(0, 8)}`;

/** Every object under `location`, as JSON Lines, by key. */
async function objects(location: string): Promise<Map<string, Array<Record<string, unknown>>>> {
  const store = new S3BlobStore(location);
  try {
    const found = new Map<string, Array<Record<string, unknown>>>();
    for (const { key } of await store.list('')) {
      const head = await store.head(key);
      found.set(key, (await store.get(key, head!.sha256!)).toString().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
    }
    return found;
  } finally {
    store.close();
  }
}

test('trialrun import atif puts its rejects file on S3 when TRIALRUN_REJECTS is s3://, and a missing bucket stops it before a file is read', async () => {
  const dir = tempDir('rejects-s3-import');
  const data = tempDir('rejects-s3-import-data');
  writeFileSync(join(dir, 'not-atif.json'), JSON.stringify({ schema_version: 'nope' }));
  writeFileSync(join(dir, 'lines.jsonl'), 'not json\n');
  const where = prefix('import');
  // Every document is rejected, so nothing is sent: no Kafka needed.
  const run = await runCli(['import', 'atif', dir], { env: { TRIALRUN_REJECTS: `${where}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(run.code, 1, run.stderr);
  const found = await objects(`${where}/rejects`);
  assert.equal(found.size, 1);
  const [key, rejects] = [...found][0]!;
  assert.match(key, /^atif-import-[\dT-]+Z\.jsonl$/);
  assert.deepEqual(rejects.map((reject) => [String(reject.source).split('/').pop(), reject.row, reject.stage]), [['lines.jsonl', 1, 'validate'], ['not-atif.json', 1, 'validate']]);
  assert.match(run.stdout, new RegExp(`2 rejected, listed in ${where}/rejects/${key}\\n$`));
  assert.equal(existsSync(join(data, 'rejects')), false, 'no local rejects folder');

  const bucket = `missing-${randomUUID().slice(0, 8)}`;
  const missing = await runCli(['import', 'atif', dir], { env: { TRIALRUN_REJECTS: `s3://${bucket}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, new RegExp(`^trialrun import: [^\\n]*bucket "${bucket}" does not exist[^\\n]*\\n$`));
  assert.doesNotMatch(missing.stderr, /rejected/, 'no file was read');
});

test('trialrun ceiling puts its task preparation\'s rejects on S3, even when it stops after it; a missing bucket stops it first', async () => {
  const dir = tempDir('rejects-s3-ceiling');
  const data = tempDir('rejects-s3-ceiling-data');
  const rows = readFileSync(join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), 'utf8').split('\n').filter(Boolean);
  const tasks = join(dir, 'rows.jsonl');
  writeFileSync(tasks, [...rows, '{"id": "broken"}', 'not json'].join('\n') + '\n');
  // A labels file that is not JSON Lines: ceiling stops when it reads it, after the tasks were prepared.
  const labels = join(dir, 'labels.jsonl');
  writeFileSync(labels, 'not json\n');
  const where = prefix('ceiling');
  const run = await runCli(['ceiling', '--tasks', tasks, '--labels', labels], { env: { TRIALRUN_REJECTS: `${where}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /labels\.jsonl line 1/);
  const found = [...(await objects(`${where}/rejects`))];
  assert.equal(found.length, 1);
  assert.match(found[0]![0], /^ceiling-[0-9a-f]{8}\.jsonl$/);
  assert.deepEqual(found[0]![1].map((reject) => reject.row), [rows.length + 1, rows.length + 2]);

  const bucket = `missing-${randomUUID().slice(0, 8)}`;
  const missing = await runCli(['ceiling', '--tasks', tasks, '--labels', labels], { env: { TRIALRUN_REJECTS: `s3://${bucket}/rejects`, TRIALRUN_DATA_DIR: data } });
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, new RegExp(`^trialrun ceiling: [^\\n]*bucket "${bucket}" does not exist[^\\n]*\\n$`));
});
