import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Command } from '../command.js';
import { COMMANDS } from './index.js';

const isCommand = (value: unknown): value is Command => typeof value === 'object' && value !== null && 'name' in value && 'run' in value && 'summary' in value;

test('every command module is registered, once, under a unique name', async () => {
  const dir = dirname(fileURLToPath(import.meta.url));
  const modules = readdirSync(dir).filter((file) => file.endsWith('.js') && !file.endsWith('.test.js') && file !== 'index.js');
  const defined: Command[] = [];
  for (const file of modules) defined.push(...Object.values(await import(pathToFileURL(`${dir}/${file}`).href)).filter(isCommand));
  const missing = defined.filter((command) => !COMMANDS.includes(command)).map((command) => command.name);
  assert.deepEqual(missing, [], 'commands defined but not reachable from the CLI');
  assert.equal(new Set(COMMANDS.map((command) => command.name)).size, COMMANDS.length);
});
