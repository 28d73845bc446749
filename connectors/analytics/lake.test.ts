import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ArtifactIntegrityError } from '../../schemas/index.js';
import { LocalBlobStore, type BlobStore } from '../storage/index.js';
import { blobLake } from './lake.js';

/** A store whose first `replacements` gets find the object replaced by another flush after the reader's head. */
function replacedUnderReader(store: LocalBlobStore, replacement: () => Promise<void>, replacements: number): BlobStore {
  let left = replacements;
  return Object.assign(Object.create(store) as BlobStore, {
    get: async (key: string, sha256: string) => {
      if (left-- > 0) await replacement();
      return store.get(key, sha256);
    },
  });
}

test('a ledger entry replaced between its head and its get is read again, at the newer offset', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'trialrun-lake-test-'));
  try {
    const store = new LocalBlobStore(folder);
    let landed = 10n;
    const writer = blobLake(store);
    await writer.writeLedger('rewards', 0, landed);
    const reader = blobLake(replacedUnderReader(store, () => writer.writeLedger('rewards', 0, (landed += 5n)), 2));
    assert.equal(await reader.readLedger('rewards', 0), 20n);
    assert.equal(await reader.readLedger('rewards', 1), -1n, 'a partition with no entry has landed nothing');
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('a ledger entry whose bytes fail the digest its unchanged head reports is damage, not a race', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'trialrun-lake-test-'));
  try {
    const store = new LocalBlobStore(folder);
    await blobLake(store).writeLedger('rewards', 0, 3n);
    const damaged = Object.assign(Object.create(store) as BlobStore, { get: async () => Promise.reject(new ArtifactIntegrityError('fails its sha256 check')) });
    await assert.rejects(blobLake(damaged).readLedger('rewards', 0), ArtifactIntegrityError);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
