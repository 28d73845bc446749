import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { bucketOf, dataFileName, listDataFiles, parseDataFileName, partitionSuperseded, readLedger, writeLedger, type DataFile } from './layout.js';

test('file names carry topic, partition and offset range, and parse back (topics may contain dashes)', () => {
  const range = { topic: 'trialrun.policy-checkpoints', partition: 2, first: 10n, last: 99n };
  assert.equal(dataFileName(range), 'trialrun.policy-checkpoints-p2-10-99.parquet');
  assert.deepEqual(parseDataFileName(dataFileName(range)), range);
  assert.equal(parseDataFileName('x-p1-2-3.parquet.tmp-42'), undefined);
  assert.equal(parseDataFileName('notes.parquet'), undefined);
});

test('rows land in run and UTC-hour folders; odd run ids are made safe', () => {
  assert.equal(bucketOf('run-1', '2025-03-04T05:59:59.999Z'), 'run_id=run-1/hour=2025-03-04T05');
  assert.equal(bucketOf('a/b c', '2025-03-04T23:00:00+02:00'), 'run_id=a_b_c/hour=2025-03-04T21');
  assert.equal(bucketOf('r', 'not a time'), 'run_id=r/hour=unknown');
});

const file = (bucket: string, first: number, last: number, partition = 0): DataFile => ({
  topic: 't',
  partition,
  first: BigInt(first),
  last: BigInt(last),
  bucket,
  path: `${bucket}/t-p${partition}-${first}-${last}.parquet`,
  bytes: 1,
});

test('a file whose range lies inside a compacted file of the same folder and partition is superseded', () => {
  const files = [file('a', 0, 9), file('a', 10, 19), file('a', 0, 19), file('a', 20, 29), file('b', 0, 9), file('a', 5, 7, 1)];
  const { live, superseded } = partitionSuperseded(files);
  assert.deepEqual(superseded.map((f) => f.path).sort(), ['a/t-p0-0-9.parquet', 'a/t-p0-10-19.parquet']);
  assert.deepEqual(live.map((f) => f.path).sort(), ['a/t-p0-0-19.parquet', 'a/t-p0-20-29.parquet', 'a/t-p1-5-7.parquet', 'b/t-p0-0-9.parquet']);
});

test('lists data files recursively with their folder, ignoring temporary files; the ledger round-trips', () => {
  const root = mkdtempSync(join(tmpdir(), 'trialrun-layout-'));
  const dir = join(root, 'rewards', 'run_id=r', 'hour=2025-01-01T00');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'top.ic-p1-5-8.parquet'), 'xx');
  writeFileSync(join(dir, 'top.ic-p1-9-9.parquet.tmp-7'), 'x');
  const files = listDataFiles(join(root, 'rewards'));
  assert.deepEqual(files, [{ topic: 'top.ic', partition: 1, first: 5n, last: 8n, path: join(dir, 'top.ic-p1-5-8.parquet'), bucket: join('run_id=r', 'hour=2025-01-01T00'), bytes: 2 }]);
  assert.deepEqual(listDataFiles(join(root, 'missing')), []);

  assert.equal(readLedger(root, 'top.ic', 1), -1n);
  writeLedger(root, 'top.ic', 1, 8n);
  assert.equal(readLedger(root, 'top.ic', 1), 8n);
  assert.equal(readLedger(root, 'top.ic', 0), -1n);
});
