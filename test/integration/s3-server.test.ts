import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { S3BlobStore, sha256Hex } from '../../connectors/storage/index.js';
import { ConnectionError, STACK_S3_ACCESS_KEY_ID, STACK_S3_SECRET_ACCESS_KEY, STACK_S3_URL } from '../../schemas/index.js';
import { s3Component, stackPaths, stackUp } from '../../stack/index.js';

/**
 * `stack up --s3`'s component, on a server of this test's own (its own name, ports and folder under the state
 * folder), so that stopping it leaves the stack's server alone: idempotent start, a store that rides out the server
 * being stopped and started again (retriable errors through schemas/retry.ts), and a stop that touches only it.
 */
const URL = 'http://127.0.0.1:8434';
const server = s3Component({ name: 's3-it', url: URL, external: false, ports: { master: 9534, volume: 9541, filer: 8989 } });
const log = (line: string): void => console.log(`# ${line}`);

after(async () => {
  await server.stop(log);
  rmSync(join(stackPaths().stateDir, 's3-it'), { recursive: true, force: true });
});

test('a second S3 server starts once, is reused, and its stop leaves the stack server running', { timeout: 180_000 }, async () => {
  await stackUp(log, [s3Component()]);
  assert.equal(await server.ensure(log), 'started');
  assert.equal(await server.ensure(log), 'reused');
  const credentials = { accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY };
  // Retries spaced so that the server's restart below falls inside them: after a restart on existing data the
  // gateway answers 500 for about 12 s while the master elects itself and the volume server reports in.
  const store = new S3BlobStore('s3://trialrun/outage', { endpoint: URL, ...credentials, retry: { retries: 40, initialDelayMs: 500, maxDelayMs: 2_000 } });
  try {
    const put = await store.put('kept', Buffer.from('survives a restart'));
    assert.equal(await server.stop(log), 'stopped');
    assert.equal(await server.isUp(), false);
    assert.equal(await s3Component().isUp(), true, 'the stack server still answers');
    const impatient = new S3BlobStore('s3://trialrun/outage', { endpoint: URL, ...credentials, retry: { retries: 0 } });
    await assert.rejects(impatient.get('kept', put.sha256), (error: unknown) => error instanceof ConnectionError && error.retriable);
    impatient.close();
    // A read started while the server is down succeeds once it answers again.
    const reading = store.get('kept', put.sha256);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal(await server.ensure(log), 'started');
    assert.equal((await reading).toString(), 'survives a restart');
    assert.equal((await store.head('kept'))!.sha256, sha256Hex('survives a restart'));
  } finally {
    store.close();
  }
  assert.notEqual(URL, STACK_S3_URL);
});

test('another\'s server (TRIALRUN_S3_URL) is only checked: a missing bucket is named, and not created', async () => {
  const missing = `it-missing-${Date.now().toString(36)}`;
  const theirs = s3Component({ url: STACK_S3_URL, external: true, bucket: missing, env: { AWS_ACCESS_KEY_ID: STACK_S3_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: STACK_S3_SECRET_ACCESS_KEY } });
  for (let i = 0; i < 2; i++) await assert.rejects(theirs.ensure(log), new RegExp(`bucket "${missing}" does not exist`));
  assert.equal(await theirs.stop(log), 'not-ours');
});
