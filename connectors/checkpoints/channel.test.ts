import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { answerCheckpointRequest } from './channel.js';
import { LocalCheckpointStore, sha256Hex } from './store.js';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'ckpt-channel-'));

test('put publishes the scratch file through the store under its key; get writes the checked bytes where asked', async () => {
  const store = new LocalCheckpointStore(scratch());
  const dir = scratch();
  const bytes = Buffer.from('adapter v2');
  writeFileSync(join(dir, 'a.bin'), bytes);
  const put = await answerCheckpointRequest(JSON.stringify({ id: 1, op: 'put', policyId: 'llm', version: 2, path: join(dir, 'a.bin'), sha256: sha256Hex(bytes), format: 'lora-safetensors/v1' }), store);
  assert.ok('artifact' in put);
  assert.deepEqual({ ...put.artifact, uri: fileURLToPath(put.artifact.uri) }, { uri: join(store.root, 'llm', `v2-${sha256Hex(bytes)}.bin`), sha256: sha256Hex(bytes), bytes: bytes.length, format: 'lora-safetensors/v1' });
  const get = await answerCheckpointRequest(JSON.stringify({ id: 2, op: 'get', uri: put.artifact.uri, sha256: sha256Hex(bytes), path: join(dir, 'back') }), store);
  assert.deepEqual(get, { id: 2, path: join(dir, 'back') });
  assert.deepEqual(readFileSync(join(dir, 'back')), bytes);
});

test('every failure is a reply naming it, retriable only where the store says so', async () => {
  const store = new LocalCheckpointStore(scratch());
  const dir = scratch();
  writeFileSync(join(dir, 'a.bin'), 'changed after it was hashed');
  const missing = `file://${join(store.root, 'llm', `v1-${'0'.repeat(64)}.bin`)}`;
  const cases: Array<[string, number, string, RegExp]> = [
    ['not json', -1, 'ConfigError', /a request that is not JSON/],
    [JSON.stringify({ id: 3, op: 'delete' }), 3, 'ConfigError', /not a request/],
    [JSON.stringify({ id: 4, op: 'put', policyId: 'llm', version: 1, path: join(dir, 'a.bin'), sha256: sha256Hex('weights'), format: null }), 4, 'ArtifactIntegrityError', /the learner's scratch file .*a\.bin fails its sha256 check/],
    [JSON.stringify({ id: 5, op: 'put', policyId: 'llm', version: 1, path: 'a.bin', sha256: sha256Hex('weights'), format: null }), 5, 'ConfigError', /"a\.bin" is not an absolute path/],
    [JSON.stringify({ id: 6, op: 'get', uri: missing, sha256: '0'.repeat(64), path: join(dir, 'back') }), 6, 'BlobNotFoundError', /is not in the store/],
  ];
  for (const [line, id, name, message] of cases) {
    const reply = await answerCheckpointRequest(line, store);
    assert.ok('error' in reply, line);
    assert.equal(reply.id, id);
    assert.equal(reply.error.name, name, line);
    assert.match(reply.error.message, message);
    assert.equal(reply.error.retriable, false);
  }
});
