import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cachedVenv } from './venv.js';

test('a cached virtualenv is installed once, reused while its check passes, and rebuilt when it fails', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-venv-'));
  const steps: string[] = [];
  const venv = { dir: join(dir, 'v'), installs: [], check: 'import sys', what: 'an empty venv' };
  const python = await cachedVenv(venv, 'python3', join(dir, 'log'), (line) => void steps.push(line));
  assert.equal(python, join(dir, 'v', 'bin', 'python'));
  await cachedVenv(venv, 'python3', join(dir, 'log'), (line) => void steps.push(line));
  assert.deepEqual(steps, [`installing an empty venv into ${venv.dir} (once)`], 'the second call reuses it');
  await assert.rejects(cachedVenv({ ...venv, check: 'import no_such_module' }, 'python3', join(dir, 'log'), (line) => void steps.push(line)), /an empty venv is incomplete after pip install/);
  assert.equal(steps[1], `rebuilding the incomplete virtualenv ${venv.dir}`);
});
