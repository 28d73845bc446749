import assert from 'node:assert/strict';
import { test } from 'node:test';
import { benchArgs, type BenchIo } from './harness.js';

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Records what a bench would print, and stops it where it would exit. */
function recorder(): BenchIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    out: (text: string) => void (io.stdout += text),
    err: (text: string) => void (io.stderr += text),
    exit: (code: number): never => {
      throw new Exit(code);
    },
  };
  return io;
}

const OPTIONS = { rounds: { type: 'string', default: '3' }, backend: { type: 'string', default: 'docker' }, write: { type: 'boolean', default: false } } as const;
const USAGE = ['npm run bench:x [-- --rounds 3]', 'npm run bench:x -- --write'];

function exitOf(argv: string[], io: BenchIo, check?: (args: ReturnType<typeof benchArgs<typeof OPTIONS>>) => unknown): number | undefined {
  try {
    const args = benchArgs('bench:x', USAGE, OPTIONS, { argv, io });
    check?.(args);
    return undefined;
  } catch (error) {
    if (error instanceof Exit) return error.code;
    throw error;
  }
}

test('benchArgs: an unknown option is a one-line error with the usage, exit 2', () => {
  const io = recorder();
  assert.equal(exitOf(['--bogus'], io), 2);
  const [first, ...rest] = io.stderr.trimEnd().split('\n');
  assert.equal(first, "bench:x: unknown option '--bogus'");
  assert.deepEqual(rest, ['Usage: npm run bench:x [-- --rounds 3]', '       npm run bench:x -- --write', '(--help lists the options)']);
  assert.equal(io.stdout, '');
});

test('benchArgs: a positional, a missing value and a value given to a flag are each one line, exit 2', () => {
  for (const [argv, line] of [
    [['extra'], "bench:x: unexpected argument 'extra' (options start with --)"],
    [['--rounds'], "bench:x: option '--rounds <value>' needs a value"],
    [['--write=yes'], "bench:x: option '--write' takes no value"],
  ] as const) {
    const io = recorder();
    assert.equal(exitOf([...argv], io), 2, argv.join(' '));
    assert.equal(io.stderr.split('\n')[0], line);
  }
});

test('benchArgs: --help and -h print the usage and the options with their defaults, exit 0', () => {
  for (const flag of ['--help', '-h']) {
    const io = recorder();
    assert.equal(exitOf([flag], io), 0);
    assert.equal(io.stderr, '');
    assert.match(io.stdout, /^Usage: npm run bench:x \[-- --rounds 3\]\n {7}npm run bench:x -- --write\n\nOptions:\n/);
    assert.match(io.stdout, /--rounds <value> +\(default: 3\)/);
    assert.match(io.stdout, /--write +\(default: false\)/);
    assert.match(io.stdout, /--help +Show this help/);
  }
});

test('benchArgs: good flags parse to their values, defaults kept', () => {
  const io = recorder();
  assert.equal(
    exitOf(['--rounds', '5', '--write'], io, (args) => {
      assert.deepEqual({ ...args.values }, { rounds: '5', backend: 'docker', write: true });
      assert.equal(args.int('rounds'), 5);
      assert.equal(args.choice('backend', ['docker', 'process']), 'docker');
    }),
    undefined,
  );
});

test('benchArgs: a bad value is the check\'s one-line error, exit 2', () => {
  for (const [argv, read, line] of [
    [['--rounds', 'x'], (args) => args.int('rounds'), 'bench:x: --rounds must be a whole number >= 1, got "x"'],
    [['--backend', 'vm'], (args) => args.choice('backend', ['docker', 'process']), 'bench:x: --backend must be one of docker, process, got "vm"'],
    [['--backend', 'docker,vm'], (args) => args.choices('backend', ['docker', 'process']), 'bench:x: --backend takes docker, process (comma-separated), got "docker,vm"'],
    [[], (args) => args.fail('--rounds 3 is too few here'), 'bench:x: --rounds 3 is too few here'],
  ] as const satisfies readonly (readonly [string[], (args: ReturnType<typeof benchArgs<typeof OPTIONS>>) => unknown, string])[]) {
    const io = recorder();
    assert.equal(exitOf([...argv], io, read), 2, line);
    assert.equal(io.stderr.split('\n')[0], line);
    assert.match(io.stderr, /\nUsage: npm run bench:x/);
  }
});

test('benchArgs: an error that is not about the command line is thrown on', () => {
  const io = recorder();
  assert.throws(() => exitOf([], io, (args) => args.check(() => { throw new Error('broker down'); })), /broker down/);
  assert.equal(io.stderr, '');
});
