import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { rejectsLocation, rejectsOutput } from './paths.js';

test('rejects go to TRIALRUN_REJECTS (a folder or s3://), else beside an s3:// --data-dir, else under the data folder', () => {
  const env = { TRIALRUN_STATE_DIR: '/state' };
  assert.equal(rejectsLocation({}, env), join('/state', 'data', 'rejects'));
  assert.equal(rejectsLocation({ 'data-dir': '/d' }, env), '/d/rejects');
  assert.equal(rejectsLocation({ 'data-dir': 's3://lake-bucket/runs/1' }, env), 's3://lake-bucket/runs/1/rejects');
  assert.equal(rejectsLocation({ 'data-dir': '/d' }, { ...env, TRIALRUN_REJECTS: 's3://bkt/rejects' }), 's3://bkt/rejects');
  assert.throws(() => rejectsLocation({}, { ...env, TRIALRUN_REJECTS: 's3://No_Bucket/r' }), (error: unknown) => error instanceof ConfigError && /^TRIALRUN_REJECTS: "No_Bucket"/.test(error.message));
  assert.throws(() => rejectsLocation({ 'data-dir': 's3://No_Bucket/lake' }, env), (error: unknown) => error instanceof ConfigError && /^--data-dir: "No_Bucket"/.test(error.message));
});

test("a command's own rejects file is a local file, or an object staged locally and put under its name", () => {
  const local = rejectsOutput('import-1.jsonl', { 'data-dir': '/d' }, { TRIALRUN_STATE_DIR: '/state' });
  assert.deepEqual([local.path, local.destination], ['/d/rejects/import-1.jsonl', '/d/rejects/import-1.jsonl']);
  const object = rejectsOutput('import-1.jsonl', {}, { TRIALRUN_STATE_DIR: '/state', TRIALRUN_REJECTS: 's3://bkt/rejects/' });
  try {
    assert.equal(object.destination, 's3://bkt/rejects/import-1.jsonl');
    assert.notEqual(object.path, object.destination);
  } finally {
    object.close();
  }
});
