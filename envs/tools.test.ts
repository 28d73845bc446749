import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { ConfigError, isRetriable, TrialrunError, WorkspaceFileError, type ToolCall } from '../schemas/index.js';
import { ENVIRONMENTS } from './index.js';
import { checkToolCall, isAgentError, tool, toolSpec, ToolRefusal } from './tools.js';
import { EnvRegistry } from './types.js';

const TOOLS = [tool('read', 'Read a file.', { path: z.string(), line: z.int().min(1).optional() }), tool('submit', 'Done.', {})] as const;

test('the function-calling schema comes from the zod arguments: strict, without zod\'s safe-integer bounds', () => {
  assert.deepEqual(toolSpec(TOOLS[0]), {
    name: 'read',
    description: 'Read a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, line: { type: 'integer', minimum: 1 } }, required: ['path'], additionalProperties: false },
  });
  assert.equal(toolSpec(TOOLS[0]), toolSpec(TOOLS[0]), 'one spec object per tool');
  assert.deepEqual(toolSpec(TOOLS[1]).parameters, { type: 'object', properties: {}, additionalProperties: false });
});

test('every bad call is a ConfigError naming the tool and the argument', () => {
  const refused = (call: unknown, message: RegExp): void => assert.throws(() => checkToolCall(TOOLS, call as ToolCall), (error: unknown) => error instanceof ConfigError && message.test(error.message));
  refused(null, /a tool call must be an object/);
  refused({ name: 'rm', arguments: {} }, /unknown tool "rm"; tools: read, submit/);
  refused({ name: 'read', arguments: [] }, /tool read: arguments must be an object, got \[\]/);
  refused({ name: 'read', arguments: 'x' }, /arguments must be an object, got "x"/);
  refused({ name: 'read', arguments: {} }, /tool read: argument "path" must be a string, got nothing/);
  refused({ name: 'read', arguments: { path: 3 } }, /argument "path" must be a string, got 3/);
  refused({ name: 'read', arguments: { path: 'a', line: 1.5 } }, /argument "line" must be a whole number, got 1\.5/);
  refused({ name: 'read', arguments: { path: 'a', line: 0 } }, /argument "line" must be >=1, got 0/);
  refused({ name: 'read', arguments: { path: 'a', mode: 'w' } }, /tool read takes no argument "mode" \(it takes path, line\)/);
  refused({ name: 'submit', arguments: { now: true } }, /takes no argument "now" \(it takes none\)/);
  assert.deepEqual(checkToolCall(TOOLS, { name: 'read', arguments: { path: 'a', line: 2 } }), { name: 'read', args: { path: 'a', line: 2 } });
});

test('the registry is the explicit list: the four environments, unknown ids and duplicates refused', () => {
  assert.deepEqual(ENVIRONMENTS.ids(), ['program-repair/v1', 'workspace/v1', 'single-turn/v1', 'agent-command/v1']);
  assert.throws(() => ENVIRONMENTS.get('nope/v1'), /unknown environment "nope\/v1"; registered: program-repair\/v1, workspace\/v1, single-turn\/v1, agent-command\/v1/);
  const spec = ENVIRONMENTS.get('workspace/v1');
  assert.throws(() => new EnvRegistry([spec, spec]), /environment "workspace\/v1" is listed twice/);
});

test('the agent\'s errors are in the taxonomy and never retried; anything else is not the agent\'s to read', () => {
  const agents = [new ToolRefusal('no unique match'), new ConfigError('unknown tool'), new WorkspaceFileError('absolute path', 'bad-path')];
  for (const error of agents) assert.ok(isAgentError(error) && error instanceof TrialrunError && !isRetriable(error), error.name);
  assert.equal(new ToolRefusal('x').name, 'ToolRefusal');
  assert.equal(isAgentError(new Error('the engine went away')), false);
});
