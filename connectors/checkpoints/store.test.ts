import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { BlobExistsError, BlobNotFoundError, isRetriable } from '../../schemas/index.js';
import { BlobCheckpointStore, LocalCheckpointStore, openCheckpointStore, sha256Hex } from './store.js';

test('put, get with digest check, and list by version', async () => {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-')));
  const a = await store.put('linear-repair', 2, Buffer.from('two'));
  const b = await store.put('linear-repair', 1, Buffer.from('one'));
  assert.equal((await store.get(a)).toString(), 'two');
  assert.deepEqual((await store.list('linear-repair')).map((e) => e.version), [1, 2]);
  assert.deepEqual((await store.list('linear-repair'))[0]!.artifact, { ...b, format: null });
  assert.deepEqual(await store.list('nothing-yet'), []);
});

test('an artifact is never replaced: the same bytes again are harmless, a redo with other bytes is stored beside it', async () => {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-')));
  const first = await store.put('p', 3, Buffer.from('weights'));
  assert.deepEqual(await store.put('p', 3, Buffer.from('weights')), first);
  // A learner killed before its record committed, then its successor's redo of the update: both artifacts stay
  // whole, and the record that commits names which one is version 3.
  const redo = await store.put('p', 3, Buffer.from('other weights'));
  assert.notEqual(redo.uri, first.uri);
  assert.equal((await store.get(first)).toString(), 'weights');
  assert.equal((await store.get(redo)).toString(), 'other weights');
  // An object whose bytes changed on disk is not taken for the artifact it was, even by a put of those bytes.
  writeFileSync(fileURLToPath(first.uri), 'changed');
  await assert.rejects(store.put('p', 3, Buffer.from('weights')), (error: unknown) => error instanceof BlobExistsError && !isRetriable(error));
});

test('tampered bytes are refused, a missing artifact is named', async () => {
  const store = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-')));
  const artifact = await store.put('p', 1, Buffer.from('weights'));
  writeFileSync(fileURLToPath(artifact.uri), 'tampered');
  await assert.rejects(store.get(artifact), /fails its sha256 check/);
  await assert.rejects(store.get({ ...artifact, uri: artifact.uri.replace('/v1-', '/v9-') }), BlobNotFoundError);
});

test('lists and reads what the Python learner writes (the same v<N>-<sha256>.bin), and file: artifacts from elsewhere', async () => {
  const root = mkdtempSync(join(tmpdir(), 'ckpt-'));
  mkdirSync(join(root, 'llm'));
  const bytes = Buffer.from('adapter');
  const legacy = join(root, 'llm', `v4-${sha256Hex(bytes)}.bin`);
  writeFileSync(legacy, bytes);
  const store = new LocalCheckpointStore(root);
  const [listed] = await store.list('llm');
  assert.deepEqual(listed, { version: 4, artifact: { uri: pathToFileURL(legacy).href, sha256: sha256Hex(bytes), bytes: bytes.length, format: null } });
  assert.equal((await store.get(listed!.artifact)).toString(), 'adapter');
  const elsewhere = new LocalCheckpointStore(mkdtempSync(join(tmpdir(), 'ckpt-other-')));
  assert.equal((await elsewhere.get(listed!.artifact)).toString(), 'adapter');
});

test('locations: a folder, file: and s3:// (checked before anything connects); other schemes are named', () => {
  assert.ok(openCheckpointStore('/tmp/x') instanceof LocalCheckpointStore || openCheckpointStore('/tmp/x') instanceof BlobCheckpointStore);
  assert.ok(openCheckpointStore('s3://trialrun/checkpoints') instanceof BlobCheckpointStore);
  assert.throws(() => openCheckpointStore('s3://No_Bucket/x'), /TRIALRUN_CHECKPOINTS: "No_Bucket" .* is not an S3 bucket name/);
  assert.throws(() => openCheckpointStore('gs://bucket/x'), /TRIALRUN_CHECKPOINTS: no store for "gs:\/\/" locations/);
});
