import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STACK_S3_ACCESS_KEY_ID, STACK_S3_URL } from '../../../schemas/index.js';
import { resolveS3StoreOptions } from './options.js';

test('defaults: the stack server with its own identity; AWS_* and TRIALRUN_S3_URL when set', () => {
  const local = resolveS3StoreOptions({ env: {} });
  assert.equal(local.endpoint, STACK_S3_URL);
  assert.equal(local.credentials?.accessKeyId, STACK_S3_ACCESS_KEY_ID);
  assert.equal(local.forcePathStyle, true);
  assert.equal(local.partBytes, 8 * 1024 * 1024);
  const remote = resolveS3StoreOptions({ env: { TRIALRUN_S3_URL: 'https://s3.example.test/', AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's', AWS_REGION: 'eu-west-1' } });
  assert.deepEqual([remote.endpoint, remote.credentials], ['https://s3.example.test', { accessKeyId: 'k', secretAccessKey: 's' }]);
  assert.equal(remote.region, 'eu-west-1');
  const aws = resolveS3StoreOptions({ env: { TRIALRUN_S3_URL: 'aws' } });
  assert.deepEqual([aws.endpoint, aws.credentials, aws.forcePathStyle], [null, null, false]);
});

test('bad settings are refused by name', () => {
  assert.throws(() => resolveS3StoreOptions({ env: { TRIALRUN_S3_URL: 's3://bucket/x' } }), /TRIALRUN_S3_URL .* is not http\(s\)/);
  assert.throws(() => resolveS3StoreOptions({ env: { TRIALRUN_S3_URL: 'localhost:9000' } }), /TRIALRUN_S3_URL/);
  assert.throws(() => resolveS3StoreOptions({ env: { AWS_ACCESS_KEY_ID: 'k' } }), /only AWS_ACCESS_KEY_ID is set/);
  assert.throws(() => resolveS3StoreOptions({ env: {}, partBytes: 1024 }), /partBytes must be .* >= 5 MiB/);
  assert.throws(() => resolveS3StoreOptions({ env: {}, multipartThresholdBytes: 6 * 1024 * 1024, partBytes: 8 * 1024 * 1024 }), /multipartThresholdBytes .* must be at least partBytes/);
  assert.throws(() => resolveS3StoreOptions({ env: {}, partConcurrency: 0 }), /partConcurrency/);
});
