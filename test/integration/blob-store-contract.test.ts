import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ensureS3Bucket, LocalBlobStore, S3BlobStore, sha256Hex, type BlobStore, type S3StoreOptions } from '../../connectors/storage/index.js';
import { ArtifactIntegrityError, BlobExistsError, BlobNotFoundError, ConfigError, ConnectionError, isRetriable, STACK_S3_URL } from '../../schemas/index.js';
import { freePort, s3Component, stackUp } from '../../stack/index.js';
import { tempDir } from './harness.js';

/**
 * The contract every BlobStore keeps, run against each implementation: the local folder (the embedded default) and
 * S3 on the stack's real S3 server (`stack up --s3`, SeaweedFS), each test in a bucket of its own. Small parts
 * (5 MiB, S3's least) let a 12 MiB object exercise the multipart path.
 */
const MIB = 1024 * 1024;
const S3_OPTIONS: S3StoreOptions = { multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB, partConcurrency: 2 };

const bucket = `it-blobs-${randomUUID().slice(0, 8)}`;
const stores: BlobStore[] = [];

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), [s3Component()]);
  await ensureS3Bucket(`s3://${bucket}`, { endpoint: STACK_S3_URL });
});
after(() => stores.forEach((store) => store.close()));

const CASES: Record<string, () => BlobStore> = {
  local: () => new LocalBlobStore(tempDir('blobs')),
  s3: () => new S3BlobStore(`s3://${bucket}/${randomUUID().slice(0, 8)}`, S3_OPTIONS),
};

for (const [name, open] of Object.entries(CASES)) {
  describe(`BlobStore contract: ${name}`, () => {
    const fresh = (): BlobStore => {
      const store = open();
      stores.push(store);
      return store;
    };

    it('answers check, and gives back what was put, with its digest and size', async () => {
      const store = fresh();
      await store.check();
      const data = Buffer.from('policy weights\n');
      const put = await store.put('policy/v1.bin', data);
      assert.deepEqual(put, { key: 'policy/v1.bin', uri: store.uri('policy/v1.bin'), sha256: sha256Hex(data), bytes: data.length, created: true });
      assert.deepEqual(await store.get('policy/v1.bin', put.sha256), data);
      assert.deepEqual(await store.head('policy/v1.bin'), { key: 'policy/v1.bin', bytes: data.length, sha256: put.sha256 });
      assert.equal(await store.head('policy/v2.bin'), null);
      const empty = await store.put('empty', Buffer.alloc(0));
      assert.equal((await store.get('empty', empty.sha256)).length, 0);
    });

    it('refuses bytes that do not match the digest, on get and on put, naming the object', async () => {
      const store = fresh();
      await store.put('a', Buffer.from('one'));
      await assert.rejects(store.get('a', sha256Hex('two')), (error: unknown) => error instanceof ArtifactIntegrityError && !isRetriable(error) && error.message.includes(store.uri('a')));
      await assert.rejects(store.put('b', Buffer.from('one'), { sha256: sha256Hex('two') }), ArtifactIntegrityError);
      assert.equal(await store.head('b'), null);
      await assert.rejects(store.get('a', 'not-a-digest'), ConfigError);
    });

    it('names a missing object, and does not retry it', async () => {
      const store = fresh();
      await assert.rejects(store.get('missing/x', sha256Hex('x')), (error: unknown) => error instanceof BlobNotFoundError && !isRetriable(error) && error.message.includes(store.uri('missing/x')));
    });

    it('publishes a key once when two writers create it at the same moment', async () => {
      const store = fresh();
      const rivals = [Buffer.from('writer A'), Buffer.from('writer B')];
      const results = await Promise.allSettled(rivals.map((data) => store.put('policy/v7.bin', data, { ifAbsent: true })));
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.equal(won.length, 1);
      assert.equal(lost.length, 1);
      assert.ok(lost[0]!.reason instanceof BlobExistsError && !isRetriable(lost[0]!.reason), String(lost[0]!.reason));
      const winner = (won[0] as PromiseFulfilledResult<{ sha256: string }>).value;
      assert.ok(rivals.some((data) => sha256Hex(data) === winner.sha256));
      assert.equal((await store.head('policy/v7.bin'))!.sha256, winner.sha256);
      // The winner's bytes again (a retry whose first answer was lost) are success without a second object.
      const again = await store.put('policy/v7.bin', rivals.find((data) => sha256Hex(data) === winner.sha256)!, { ifAbsent: true });
      assert.equal(again.created, false);
      // A plain put replaces.
      await store.put('policy/v7.bin', Buffer.from('replaced'));
      assert.equal((await store.get('policy/v7.bin', sha256Hex('replaced'))).toString(), 'replaced');
    });

    it('lists by plain prefix, sorted, and deletes', async () => {
      const store = fresh();
      for (const key of ['trees/ab/1', 'trees/ab/2', 'trees/abc', 'blobs/ab/3', 'top']) await store.put(key, Buffer.from(key));
      assert.deepEqual((await store.list('trees/ab')).map((b) => b.key), ['trees/ab/1', 'trees/ab/2', 'trees/abc']);
      assert.deepEqual((await store.list('trees/ab/')).map((b) => b.key), ['trees/ab/1', 'trees/ab/2']);
      assert.deepEqual((await store.list('')).map((b) => b.key), ['blobs/ab/3', 'top', 'trees/ab/1', 'trees/ab/2', 'trees/abc']);
      assert.deepEqual(await store.list('nothing/'), []);
      assert.equal((await store.list('top'))[0]!.bytes, 3);
      await store.delete('trees/ab/1');
      await store.delete('trees/ab/1');
      assert.deepEqual((await store.list('trees/')).map((b) => b.key), ['trees/ab/2', 'trees/abc']);
    });

    it('stores a large object whole (multipart on S3), and creates it once', async () => {
      const store = fresh();
      const data = randomBytes(12 * MIB + 123);
      const put = await store.put('lake/big.parquet', data, { ifAbsent: true });
      assert.equal(put.bytes, data.length);
      assert.ok((await store.get('lake/big.parquet', put.sha256)).equals(data));
      assert.equal((await store.head('lake/big.parquet'))!.sha256, sha256Hex(data));
      await assert.rejects(store.put('lake/big.parquet', randomBytes(12 * MIB), { ifAbsent: true }), BlobExistsError);
      assert.ok((await store.get('lake/big.parquet', put.sha256)).equals(data));
    });

    it('refuses keys that are not plain relative paths', async () => {
      const store = fresh();
      for (const key of ['', '/abs', 'a//b', 'a/../b', './a', 'a\\b', 'a/.tmp-1']) {
        await assert.rejects(store.put(key, Buffer.from('x')), ConfigError, `key ${JSON.stringify(key)}`);
      }
    });
  });
}

describe('S3 store: what is wrong is said at start, and an unreachable server is retriable', () => {
  it('names a missing bucket and refused credentials in one line at check', async () => {
    await assert.rejects(new S3BlobStore(`s3://${bucket}-none/x`).check(), (error: unknown) => error instanceof ConfigError && /bucket "it-blobs-.*-none" does not exist/.test(error.message));
    const wrong = new S3BlobStore(`s3://${bucket}/x`, { accessKeyId: 'trialrun', secretAccessKey: 'wrong' });
    await assert.rejects(wrong.check(), (error: unknown) => error instanceof ConfigError && /AWS_ACCESS_KEY_ID/.test(error.message));
    await assert.rejects(wrong.get('k', sha256Hex('k')), (error: unknown) => !isRetriable(error) && /refused the credentials|access denied/.test(String(error)));
  });

  it('refuses a malformed s3:// URL before it connects', () => {
    assert.throws(() => new S3BlobStore('s3://Bad_Bucket/x', {}, 'TRIALRUN_CHECKPOINTS'), /TRIALRUN_CHECKPOINTS: "Bad_Bucket" .* is not an S3 bucket name/);
    assert.throws(() => new S3BlobStore('s3:/bucket', {}, 'TRIALRUN_ARTIFACTS'), /TRIALRUN_ARTIFACTS: "s3:\/bucket" is not an s3:\/\/<bucket>\/<prefix> URL/);
  });

  it('turns an unreachable server into a retriable ConnectionError after its retries', async () => {
    const port = await freePort();
    const store = new S3BlobStore(`s3://${bucket}/x`, { endpoint: `http://127.0.0.1:${port}`, accessKeyId: 'a', secretAccessKey: 'b', retry: { retries: 2, initialDelayMs: 10, maxDelayMs: 20 } });
    stores.push(store);
    await assert.rejects(store.get('k', sha256Hex('k')), (error: unknown) => error instanceof ConnectionError && isRetriable(error) && error.message.includes(`s3://${bucket}/x/k`));
    await assert.rejects(store.check(), (error: unknown) => error instanceof ConfigError && /trialrun stack up --s3/.test(error.message));
  });
});
