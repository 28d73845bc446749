import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REPAIR_TOOL_DEFS, toolSpecs } from '../../envs/index.js';
import { TOOL_ARGUMENT_BOUNDS } from '../../schemas/index.js';

const REPAIR_TOOL_SPECS = toolSpecs(REPAIR_TOOL_DEFS);
import { describeTools, oneArgumentCall, parseFunctionCall, parseToolCallReply, toolCallSchema } from './tool-calls.js';

test('the reply schema allows exactly one call of each of the environment\'s tools, with that tool\'s own argument schema', () => {
  const schema = toolCallSchema(REPAIR_TOOL_SPECS) as { oneOf: Array<{ properties: { name: { const: string }; arguments: unknown }; required: string[]; additionalProperties: boolean }> };
  assert.deepEqual(schema.oneOf.map((option) => option.properties.name.const), REPAIR_TOOL_SPECS.map((tool) => tool.name));
  for (const [i, option] of schema.oneOf.entries()) {
    assert.equal(option.properties.arguments, REPAIR_TOOL_SPECS[i]!.parameters, 'the spec itself, never a copy');
    assert.deepEqual(option.required, ['name', 'arguments']);
    assert.equal(option.additionalProperties, false);
  }
});

test('the tool list names every tool with its arguments', () => {
  const listing = describeTools(REPAIR_TOOL_SPECS);
  assert.match(listing, /\{"name": "apply_edit", "arguments": \{"id": <integer>\}\}/);
  assert.equal(listing.split('\n').length, REPAIR_TOOL_SPECS.length);
});

test('a reply is one tool call or a reason it is not', () => {
  assert.deepEqual(parseToolCallReply('{"name": "apply_edit", "arguments": {"id": 3}}', REPAIR_TOOL_SPECS), { call: { name: 'apply_edit', arguments: { id: 3 } }, invalid: null });
  assert.deepEqual(parseToolCallReply('{"name": "run_tests"}', REPAIR_TOOL_SPECS).call, { name: 'run_tests', arguments: {} });
  assert.match(parseToolCallReply('{"name": "run_te', REPAIR_TOOL_SPECS).invalid!, /not one JSON object we read \(.+; it starts "\{\\"name\\": \\"run_te"\)/);
  assert.match(parseToolCallReply('', REPAIR_TOOL_SPECS).invalid!, /it is empty/);
  assert.match(parseToolCallReply('[1]', REPAIR_TOOL_SPECS).invalid!, /must be a JSON object/);
  assert.match(parseToolCallReply('{"name": "rm", "arguments": {}}', REPAIR_TOOL_SPECS).invalid!, /unknown tool "rm"; tools: read_file, write_file/);
  assert.match(parseToolCallReply('{"name": "revert", "arguments": [1]}', REPAIR_TOOL_SPECS).invalid!, /arguments of revert must be a JSON object/);
  assert.match(parseFunctionCall('read_file', '{"path": ', REPAIR_TOOL_SPECS).invalid!, /arguments of "read_file" are not JSON/);
  assert.deepEqual(parseFunctionCall('submit', '', REPAIR_TOOL_SPECS).call, { name: 'submit', arguments: {} });
});

test("a tool call's arguments are read within bounds: too long, too deep or too many values is a refused call saying which, never a thrown error", () => {
  const deep = `{"path": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
  assert.match(parseFunctionCall('read_file', deep, REPAIR_TOOL_SPECS).invalid!, /nests deeper than 32 levels/);
  assert.match(parseToolCallReply(`{"name": "read_file", "arguments": {"path": ${'['.repeat(40)}${']'.repeat(40)}}}`, REPAIR_TOOL_SPECS).invalid!, /nests deeper than 32 levels/);
  assert.match(parseFunctionCall('write_file', JSON.stringify({ path: 'a', content: 'x'.repeat(TOOL_ARGUMENT_BOUNDS.maxBytes) }), REPAIR_TOOL_SPECS).invalid!, /above the 1048576 bytes read/);
  assert.match(parseFunctionCall('write_file', JSON.stringify({ path: 'a', content: Array.from({ length: 200_000 }, () => 0) }), REPAIR_TOOL_SPECS).invalid!, /more than 100000 values/);
});

test('a one-argument call: its opening fixed, the grammar of the rest admits exactly the listed values, spaced as the parser reads them', () => {
  const reply = oneArgumentCall('apply_edit', 'id', [3, 17]);
  assert.equal(reply.prefix, '{"name": "apply_edit", "arguments": {"id":');
  assert.equal(reply.grammar, 'root ::= " " value "}}"\nvalue ::= "3" | "17"\n');
  // Each sentence, after the opening, is a call the parser takes.
  for (const id of [3, 17]) assert.deepEqual(parseToolCallReply(`${reply.prefix} ${id}}}`, REPAIR_TOOL_SPECS).call, { name: 'apply_edit', arguments: { id } });
  assert.match(oneArgumentCall('pick', 'name', ['a"b']).grammar, /value ::= "\\"a\\\\\\"b\\""/);
  assert.throws(() => oneArgumentCall('apply_edit', 'id', []), /no values for apply_edit\.id/);
});
