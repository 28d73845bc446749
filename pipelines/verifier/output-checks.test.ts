import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutputCheck } from '../../schemas/index.js';
import { checkMarkdown, compareContent, compareCsv, decideOutputChecks, outline, type ReadBack } from './output-checks.js';

const reading = (targets: Record<string, string>) => (target: string): ReadBack => (target in targets ? { text: targets[target]! } : { problem: `${target} was not produced` });

test('content checks normalise as asked', () => {
  assert.deepEqual(compareContent('42\n', '42', 'trim'), { ok: true });
  assert.equal(compareContent('42\n', '42', 'exact').ok, false);
  assert.equal(compareContent(' a  b\n\tc ', 'a b c', 'whitespace').ok, true);
  assert.equal(compareContent('b\na\n', 'a\nb', 'lines-unordered').ok, true);
  const differs = compareContent('hello world', 'hello there', 'exact');
  assert.ok(!differs.ok && /character 6: expected "there", got "world"/.test(differs.why), JSON.stringify(differs));
});

test('CSV equality: header, rows in any order, numbers within tolerance, quoting by a real parser', async () => {
  const expected = 'name,total\n"Smith, J",3.5\nLee,10\n';
  assert.deepEqual(await compareCsv('name,total\nLee,10.0\n"Smith, J",3.5\n', expected, { ordered: false, tolerance: 0 }), { ok: true });
  assert.equal((await compareCsv('name,total\nLee,10.0\n"Smith, J",3.5\n', expected, { ordered: true, tolerance: 0 })).ok, false);
  assert.equal((await compareCsv('name,total\n"Smith, J",3.5001\nLee,10\n', expected, { ordered: true, tolerance: 0.001 })).ok, true);
  const wrong = await compareCsv('name,total\n"Smith, J",3.6\nLee,10\n', expected, { ordered: false, tolerance: 0.001 });
  assert.ok(!wrong.ok && /not among the expected rows/.test(wrong.why));
  const header = await compareCsv('name,sum\nLee,10\n"Smith, J",3.5\n', expected, { ordered: false, tolerance: 0 });
  assert.ok(!header.ok && /header/.test(header.why));
  const short = await compareCsv('name,total\nLee,10\n', expected, { ordered: false, tolerance: 0 });
  assert.ok(!short.ok && /1 data rows, expected 2/.test(short.why));
  // A duplicate row cannot stand in for a missing one.
  assert.equal((await compareCsv('name,total\nLee,10\nLee,10\n', expected, { ordered: false, tolerance: 0 })).ok, false);
});

test('markdown structure: headings in order (ATX and setext), fenced code blocks whose contents are not headings', () => {
  const doc = '# Tool\n\nIntro\n\nUsage\n-----\n\n```bash\n# not a heading\nrun it\n```\n\n## Licence ##\n';
  assert.deepEqual(outline(doc), { headings: ['# Tool', '## Usage', '## Licence'], codeBlocks: 1 });
  assert.deepEqual(checkMarkdown(doc, ['# Tool', '## Licence'], true), { ok: true });
  const order = checkMarkdown(doc, ['## Licence', '## Usage'], false);
  assert.ok(!order.ok && /out of order/.test(order.why));
  assert.ok(/missing/.test((checkMarkdown(doc, ['## not a heading'], false) as { why: string }).why));
  assert.equal(checkMarkdown('# Tool\n```\nunclosed\n', ['# Tool'], true).ok, false);
});

test('each check is one result with its id; JSON and YAML against a schema; a missing target or expected file fails with why', async () => {
  const schema = { type: 'object', required: ['version'], properties: { version: { type: 'integer' } } };
  const checks: OutputCheck[] = [
    { type: 'content', stdout: true, expected: 'done' },
    { type: 'json-schema', path: 'out.json', schema },
    { type: 'yaml-schema', path: 'conf.yaml', schema },
    { type: 'csv', path: 'missing.csv', expected: 'a\n1\n' },
    { type: 'content', path: 'out.json', expectedFile: 'expected/nowhere.txt' },
    { type: 'json-schema', path: 'bad.json', schema },
    { type: 'markdown', path: 'README.md', headings: ['# Title'] },
  ];
  const results = await decideOutputChecks(checks, reading({ stdout: 'done\n', 'out.json': '{"version": 2}', 'conf.yaml': 'version: two\n', 'bad.json': '{"version":', 'README.md': '# Title\n' }), {});
  assert.deepEqual(
    results.map((r) => [r.id, r.outcome]),
    [
      ['check[0]:content:stdout', 'passed'],
      ['check[1]:json-schema:out.json', 'passed'],
      ['check[2]:yaml-schema:conf.yaml', 'failed'],
      ['check[3]:csv:missing.csv', 'failed'],
      ['check[4]:content:out.json', 'failed'],
      ['check[5]:json-schema:bad.json', 'failed'],
      ['check[6]:markdown:README.md', 'passed'],
    ],
  );
  assert.match(results[2]!.message!, /does not match the schema: data\/version must be integer/);
  assert.match(results[3]!.message!, /missing.csv was not produced/);
  assert.match(results[4]!.message!, /not among the task's hidden files/);
  assert.match(results[5]!.message!, /not valid JSON/);
});

test('a schema is validated under the draft its $schema names: 2020-12 by default, 2019-09, draft-07', async () => {
  const read = reading({ 'a.json': '{"n": "x"}' });
  for (const $schema of [undefined, 'https://json-schema.org/draft/2019-09/schema', 'http://json-schema.org/draft-07/schema#']) {
    const schema = { ...($schema ? { $schema } : {}), type: 'object', properties: { n: { type: 'integer' } } };
    const [result] = await decideOutputChecks([{ type: 'json-schema', path: 'a.json', schema }], read, {});
    assert.equal(result!.outcome, 'failed', String($schema));
    assert.match(result!.message!, /does not match the schema: data\/n must be integer/, String($schema));
  }
});
