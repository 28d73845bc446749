import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isS3Url, parseS3Url } from './storage.js';

test('s3:// URLs are parsed and checked, naming the option', () => {
  assert.deepEqual(parseS3Url('s3://trialrun', 'X'), { bucket: 'trialrun', prefix: '' });
  assert.deepEqual(parseS3Url('s3://trialrun/runs/a/', 'X'), { bucket: 'trialrun', prefix: 'runs/a' });
  assert.throws(() => parseS3Url('s3://ab/x', 'TRIALRUN_CHECKPOINTS'), /TRIALRUN_CHECKPOINTS: "ab" .* is not an S3 bucket name/);
  assert.throws(() => parseS3Url('s3://Upper/x', 'X'), /not an S3 bucket name/);
  assert.throws(() => parseS3Url('s3://bucket/a//b', 'X'), /empty, '.' or '..' part/);
  assert.throws(() => parseS3Url('s3://bucket/../b', 'X'), /empty, '.' or '..' part/);
  assert.throws(() => parseS3Url('s3:bucket', 'X'), /is not an s3:\/\/<bucket>\/<prefix> URL/);
  assert.ok(isS3Url('S3://x') && !isS3Url('/tmp/s3') && !isS3Url('file:///s3'));
});
