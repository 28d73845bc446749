import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { StackComponent } from './component.js';
import { setupLogFile, stackUp } from './index.js';

const component = (name: string, ensure: StackComponent['ensure']): StackComponent => ({
  name,
  endpoint: () => `${name}:1`,
  isUp: async () => true,
  ensure,
  stop: async () => 'not-running',
});

test('stack up shows one line per component; the steps go to its set-up log', async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'trialrun-setup-log-'));
  const terminal: string[] = [];
  const started = component('engine', async (log) => {
    log('installing the engine (once)');
    log('apt output line');
    return 'started';
  });
  const reused = component('cache', async () => 'reused');
  const reports = await stackUp((line) => void terminal.push(line), [started, reused], stateDir);
  assert.deepEqual(reports.map((r) => [r.name, r.result]), [['engine', 'started'], ['cache', 'reused']]);
  assert.equal(terminal.length, 2, terminal.join('\n'));
  assert.match(terminal[0]!, new RegExp(`^\\[engine\\] started engine:1 \\(\\d+\\.\\ds; set-up log: ${setupLogFile(stateDir, 'engine')}\\)$`));
  assert.match(terminal[1]!, /^\[cache\] reused cache:1 \(\d+\.\ds\)$/);
  assert.match(readFileSync(setupLogFile(stateDir, 'engine'), 'utf8'), /installing the engine \(once\)\n.*apt output line\n$/);
});

test('a component that fails names its set-up log, which keeps the reason', async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'trialrun-setup-log-'));
  const terminal: string[] = [];
  const broken = component('broken', async (log) => {
    log('fetching jars');
    throw new Error('mvn failed (exit 1)');
  });
  await assert.rejects(stackUp((line) => void terminal.push(line), [broken], stateDir), /mvn failed \(exit 1\)/);
  assert.deepEqual(terminal, [`[broken] failed after ${/\d+\.\d/.exec(terminal[0] ?? '')?.[0]}s (set-up log: ${setupLogFile(stateDir, 'broken')})`]);
  assert.match(readFileSync(setupLogFile(stateDir, 'broken'), 'utf8'), /fetching jars\n.*failed: mvn failed \(exit 1\)\n$/);
});
