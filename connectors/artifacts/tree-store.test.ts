import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ArtifactIntegrityError } from '../../schemas/index.js';
import { LocalTreeStore, resolveStoredTrees, storeLargeTrees } from './tree-store.js';
import type { Task } from '../../schemas/index.js';

const root = await mkdtemp(join(tmpdir(), 'trialrun-trees-'));
after(() => rm(root, { recursive: true, force: true }));

test('a tree comes back as it was put, and trees that share files share blobs', async () => {
  const store = new LocalTreeStore(root);
  const first = { 'pkg/a.py': 'x = 1\n', 'pkg/b.py': 'y = 2\n', 'README.md': 'é\n' };
  const ref = await store.put(first);
  assert.deepEqual(await store.get(ref), first);
  assert.equal(ref.files, 3);
  assert.equal(ref.bytes, Buffer.byteLength(Object.values(first).join('')));
  await store.put({ ...first, 'pkg/b.py': 'y = 3\n' });
  const blobs = (await readdir(join(root, 'blobs'), { recursive: true })).filter((name) => name.length > 60);
  assert.equal(blobs.length, 4);
});

test('a blob changed on disk fails its digest check', async () => {
  const store = new LocalTreeStore(join(root, 'tamper'));
  const ref = await store.put({ 'a.txt': 'original' });
  const [dir] = await readdir(join(root, 'tamper', 'blobs'));
  const [name] = await readdir(join(root, 'tamper', 'blobs', dir!));
  await writeFile(join(root, 'tamper', 'blobs', dir!, name!), 'changed');
  await assert.rejects(store.get(ref), ArtifactIntegrityError);
});

test('only trees above the threshold become claim checks, and they resolve back', async () => {
  const store = new LocalTreeStore(join(root, 'tasks'));
  const task = { taskId: 't', files: { 'big.txt': 'x'.repeat(2000) }, visibleTests: { 'test_a.py': 'small' }, hiddenTests: {}, referenceSolution: null } as unknown as Task;
  const stored = await storeLargeTrees(task, store, 1000);
  assert.deepEqual(stored.files, {});
  assert.deepEqual(Object.keys(stored.stored ?? {}), ['files']);
  assert.deepEqual(stored.visibleTests, task.visibleTests);
  const resolved = await resolveStoredTrees(stored, store);
  assert.deepEqual(resolved.files, task.files);
  assert.equal(resolved.stored, undefined);
  await assert.rejects(resolveStoredTrees(stored, null), /artifact store/);
});
