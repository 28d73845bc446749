import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { limitsForWorkspace, resolveExecOptions, resolveSandboxLimits } from './types.js';

describe('resolveSandboxLimits', () => {
  it('fills defaults and keeps overrides', () => {
    const limits = resolveSandboxLimits({ memoryBytes: 256 * 1024 * 1024, cpus: 0.5 });
    assert.equal(limits.memoryBytes, 256 * 1024 * 1024);
    assert.equal(limits.cpus, 0.5);
    assert.equal(limits.pids, 128);
    assert.ok(Object.isFrozen(limits));
  });

  it('ignores fields given as undefined', () => {
    assert.equal(resolveSandboxLimits({ pids: undefined }).pids, 128);
  });

  it('rejects bad values and unknown fields, naming them', () => {
    assert.throws(() => resolveSandboxLimits({ pids: 2 }), (e: Error) => e instanceof ConfigError && /SandboxLimits\.pids .*>= 8, got 2/.test(e.message));
    assert.throws(() => resolveSandboxLimits({ memoryBytes: 1.5e8 + 0.5 }), /SandboxLimits\.memoryBytes must be a whole number/);
    assert.throws(() => resolveSandboxLimits({ cpus: Number.NaN }), /SandboxLimits\.cpus/);
    assert.throws(() => resolveSandboxLimits({ memory: 5 } as never), /SandboxLimits has no field memory/);
  });
});

describe('resolveExecOptions', () => {
  it('fills defaults', () => {
    const options = resolveExecOptions(['true']);
    assert.deepEqual({ ...options, signal: undefined }, { timeoutMs: 30_000, stdin: null, env: {}, cwd: '/workspace', maxOutputBytes: 65_536, signal: undefined, preload: [] });
  });

  it('turns string stdin into bytes', () => {
    assert.deepEqual(resolveExecOptions(['cat'], { stdin: 'hé' }).stdin, Buffer.from('hé'));
  });

  it('rejects bad commands and options, naming the field', () => {
    assert.throws(() => resolveExecOptions([]), /non-empty array/);
    assert.throws(() => resolveExecOptions(['a\0b']), /without NUL/);
    assert.throws(() => resolveExecOptions(['true'], { timeoutMs: 0 }), /ExecOptions\.timeoutMs/);
    assert.throws(() => resolveExecOptions(['true'], { maxOutputBytes: 1.5 }), /ExecOptions\.maxOutputBytes/);
    assert.throws(() => resolveExecOptions(['true'], { preload: ['pytest', 'os; rm'] }), /ExecOptions\.preload .*"os; rm"/);
    assert.throws(() => resolveExecOptions(['true'], { preload: ['a..b'] }), /ExecOptions\.preload/);
    assert.deepEqual(resolveExecOptions(['true'], { preload: ['pytest', '_pytest.python'] }).preload, ['pytest', '_pytest.python']);
    assert.throws(() => resolveExecOptions(['true'], { cwd: 'relative' }), /ExecOptions\.cwd must be an absolute path/);
    assert.throws(() => resolveExecOptions(['true'], { env: { 'A=B': 'x' } }), /ExecOptions\.env has an invalid entry/);
  });
});

describe('limitsForWorkspace', () => {
  const MiB = 1024 * 1024;
  it('is the defaults for a small tree, and a task\'s request sets the CPUs and raises the memory', () => {
    assert.equal(limitsForWorkspace(1000), undefined);
    assert.deepEqual(limitsForWorkspace(1000, { cpus: 2, memoryBytes: 1024 * MiB }), { cpus: 2, memoryBytes: 1024 * MiB });
    assert.deepEqual(limitsForWorkspace(1000, {}), undefined);
  });
  it('keeps the memory a large tree needs when the task asks for less', () => {
    const sized = limitsForWorkspace(200 * MiB)!;
    assert.ok(sized.memoryBytes! > 600 * MiB);
    assert.deepEqual(limitsForWorkspace(200 * MiB, { cpus: 1, memoryBytes: 512 * MiB }), { ...sized, cpus: 1 });
  });
});
