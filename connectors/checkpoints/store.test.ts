import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { LocalCheckpointStore, openCheckpointStore } from './store.js';

test('put, get with digest check, and list by version', async () => {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-')));
  const a = await store.put('linear-repair', 2, Buffer.from('two'));
  const b = await store.put('linear-repair', 1, Buffer.from('one'));
  assert.equal((await store.get(a)).toString(), 'two');
  assert.deepEqual((await store.list('linear-repair')).map((e) => e.version), [1, 2]);
  assert.equal((await store.list('linear-repair'))[0]!.artifact.sha256, b.sha256);
  assert.deepEqual(await store.list('nothing-yet'), []);
});

test('tampered bytes are refused', async () => {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-')));
  const artifact = await store.put('p', 1, Buffer.from('weights'));
  writeFileSync(fileURLToPath(artifact.uri), 'tampered');
  await assert.rejects(store.get(artifact), /fails its sha256 check/);
});

test('unknown schemes are named', () => {
  assert.throws(() => openCheckpointStore('s3://bucket/x'), /no checkpoint store for "s3:\/\/"/);
  assert.ok(openCheckpointStore('/tmp/x') instanceof LocalCheckpointStore);
});
