import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { BlobTreeStore, resolveStoredTrees, storeLargeTrees } from '../../connectors/artifacts/index.js';
import { BlobCheckpointStore } from '../../connectors/checkpoints/index.js';
import { ensureS3Bucket, LocalBlobStore, S3BlobStore, sha256Hex, type BlobHead, type BlobStore, type PutOptions, type PutResult } from '../../connectors/storage/index.js';
import { ArtifactIntegrityError, BlobNotFoundError, isRetriable, type Task } from '../../schemas/index.js';
import { s3Component, stackUp } from '../../stack/index.js';
import { tempDir } from './harness.js';

/**
 * The first blob kinds on the storage port, each run on the local folder and on S3 (the stack's SeaweedFS, a
 * bucket per run): policy checkpoints (write-once per version, sha256 checked on every read) and the
 * content-addressed tree store of claim checks (a digest already stored is not uploaded again).
 */
const bucket = `it-kinds-${randomUUID().slice(0, 8)}`;

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), [s3Component()]);
  await ensureS3Bucket(`s3://${bucket}`);
});

const KINDS: Record<string, () => BlobStore> = {
  local: () => new LocalBlobStore(tempDir('kinds')),
  s3: () => new S3BlobStore(`s3://${bucket}/${randomUUID().slice(0, 8)}`),
};

/** A BlobStore that counts the puts that reach the store underneath. */
class CountingStore {
  puts: string[] = [];
  constructor(readonly inner: BlobStore) {}
  wrap(): BlobStore {
    const inner = this.inner;
    return {
      location: inner.location,
      uri: (key: string) => inner.uri(key),
      put: (key: string, data: Buffer, options?: PutOptions): Promise<PutResult> => {
        this.puts.push(key);
        return inner.put(key, data, options);
      },
      get: (key: string, sha256: string) => inner.get(key, sha256),
      head: (key: string): Promise<BlobHead | null> => inner.head(key),
      list: (prefix: string) => inner.list(prefix),
      delete: (key: string) => inner.delete(key),
      check: () => inner.check(),
      close: () => inner.close(),
    };
  }
}

for (const [kind, open] of Object.entries(KINDS)) {
  describe(`checkpoints on ${kind}`, () => {
    it('publish, read back verified, list by version', async () => {
      const store = new BlobCheckpointStore(open());
      const two = await store.put('linear-repair', 2, Buffer.from('two'));
      const one = await store.put('linear-repair', 1, Buffer.from('one'), 'onnx');
      assert.equal(one.format, 'onnx');
      assert.equal((await store.get(two)).toString(), 'two');
      assert.deepEqual(await store.list('linear-repair'), [
        { version: 1, artifact: { ...one, format: null } },
        { version: 2, artifact: { ...two, format: null } },
      ]);
      assert.ok(two.uri.startsWith(kind === 's3' ? `s3://${bucket}/` : 'file:///'), two.uri);
    });

    it('an artifact is created once and never replaced: a rival or a redo of one version gets its own object', async () => {
      const store = new BlobCheckpointStore(open());
      const [a, b] = await Promise.all([store.put('p', 5, Buffer.from('learner A')), store.put('p', 5, Buffer.from('learner B'))]);
      assert.notEqual(a!.uri, b!.uri);
      assert.equal((await store.get(a!)).toString(), 'learner A');
      assert.equal((await store.get(b!)).toString(), 'learner B');
      // Two writers of the same bytes at once: one object, both told where it is.
      const same = await Promise.all([store.put('q', 1, Buffer.from('same')), store.put('q', 1, Buffer.from('same'))]);
      assert.deepEqual(same[0], same[1]);
      assert.equal((await store.list('q')).length, 1);
    });

    it('bytes changed after publication, or gone, are refused by name and not retried', async () => {
      const blobs = open();
      const store = new BlobCheckpointStore(blobs);
      const artifact = await store.put('p', 1, Buffer.from('weights'));
      const key = `p/v1-${artifact.sha256}.bin`;
      await blobs.put(key, Buffer.from('tampered'));
      await assert.rejects(store.get(artifact), (error: unknown) => error instanceof ArtifactIntegrityError && error.message.includes(artifact.uri) && !isRetriable(error));
      await blobs.delete(key);
      await assert.rejects(store.get(artifact), (error: unknown) => error instanceof BlobNotFoundError && error.message.includes(artifact.uri) && !isRetriable(error));
    });
  });

  describe(`claim-check trees on ${kind}`, () => {
    it('a tree comes back as it was put; stored digests are not uploaded again', async () => {
      const counting = new CountingStore(open());
      const store = new BlobTreeStore(counting.wrap());
      const tree = { 'pkg/a.py': 'x = 1\n', 'pkg/b.py': 'y = 2\n', 'pkg/copy.py': 'x = 1\n', 'README.md': 'é\n' };
      const ref = await store.put(tree);
      assert.deepEqual(await store.get(ref), tree);
      assert.equal(counting.puts.length, 4, 'three distinct blobs and the manifest');
      counting.puts = [];
      assert.deepEqual(await store.put(tree), ref);
      assert.deepEqual(counting.puts, [], 'the same tree again uploads nothing');
      await store.put({ ...tree, 'pkg/b.py': 'y = 3\n' });
      assert.equal(counting.puts.length, 2, 'one changed file: its blob and a manifest');
    });

    it('a large task tree travels as a claim check and resolves back; a corrupt blob is named', async () => {
      const blobs = open();
      const store = new BlobTreeStore(blobs);
      const task = { taskId: 't', files: { 'big.txt': 'x'.repeat(300_000), 'small.txt': 'y' }, visibleTests: { 'test_a.py': 'small' }, hiddenTests: {}, referenceSolution: null } as unknown as Task;
      const stored = await storeLargeTrees(task, store, 256 * 1024);
      assert.deepEqual(stored.files, {});
      assert.deepEqual((await resolveStoredTrees(stored, store)).files, task.files);
      const digest = sha256Hex('y');
      await blobs.put(`blobs/${digest.slice(0, 2)}/${digest}`, Buffer.from('z'));
      await assert.rejects(resolveStoredTrees(stored, store), (error: unknown) => error instanceof ArtifactIntegrityError && error.message.includes(digest));
      // Putting a tree that holds the damaged blob's file again repairs it.
      await store.put({ 'other.txt': 'y' });
      assert.deepEqual((await resolveStoredTrees(stored, store)).files, task.files);
    });
  });
}
