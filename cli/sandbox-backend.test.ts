import assert from 'node:assert/strict';
import test from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { sandboxBackend } from './sandbox-backend.js';

test('the scripted repair policies default to process sandboxes, the llm policy to docker, and --sandbox overrides', () => {
  assert.equal(sandboxBackend({}, 'onnx-repair'), 'process');
  assert.equal(sandboxBackend({}, 'linear-repair'), 'process');
  assert.equal(sandboxBackend({}, 'llm'), 'docker');
  assert.equal(sandboxBackend({ sandbox: 'docker' }, 'onnx-repair'), 'docker');
  assert.equal(sandboxBackend({ sandbox: 'process' }, 'llm'), 'process');
  assert.throws(() => sandboxBackend({ sandbox: 'vm' }, 'onnx-repair'), (error: unknown) => error instanceof ConfigError && /--sandbox must be one of process, docker, got "vm"/.test(error.message));
});
