import assert from 'node:assert/strict';
import test from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { processorSandboxBackend, sandboxBackend } from './sandbox-backend.js';

test('the scripted repair policies default to process sandboxes, the llm policy to docker, and --sandbox overrides', () => {
  assert.equal(sandboxBackend({}, 'onnx-repair'), 'process');
  assert.equal(sandboxBackend({}, 'linear-repair'), 'process');
  assert.equal(sandboxBackend({}, 'llm'), 'docker');
  assert.equal(sandboxBackend({ sandbox: 'docker' }, 'onnx-repair'), 'docker');
  assert.equal(sandboxBackend({ sandbox: 'process' }, 'llm'), 'process');
  assert.throws(() => sandboxBackend({ sandbox: 'vm' }, 'onnx-repair'), (error: unknown) => error instanceof ConfigError && /--sandbox must be one of process, docker, got "vm"/.test(error.message));
});

test('trialrun run: docker unless --sandbox says otherwise, and only the processors that start sandboxes take --sandbox', () => {
  assert.equal(processorSandboxBackend({}, 'rollout-worker'), 'docker');
  assert.equal(processorSandboxBackend({}, 'reward'), 'docker');
  assert.equal(processorSandboxBackend({ sandbox: 'process' }, 'rollout-worker'), 'process');
  assert.equal(processorSandboxBackend({ sandbox: 'process' }, 'verifier'), 'process');
  assert.throws(() => processorSandboxBackend({ sandbox: 'process' }, 'learner'), (error: unknown) => error instanceof ConfigError && /--sandbox goes with run rollout-worker or run verifier, not run learner/.test(error.message));
  assert.throws(() => processorSandboxBackend({ sandbox: 'vm' }, 'verifier'), (error: unknown) => error instanceof ConfigError && /--sandbox must be one of process, docker, got "vm"/.test(error.message));
});
