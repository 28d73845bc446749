import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AGENT_OUTPUT_BOUNDS, OutputCheck } from '../../schemas/index.js';
import { checkMarkdown, compareContent, compareCsv, compareJson, decideOutputChecks, outline, type ReadBack } from './output-checks.js';

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

test('CSV columns in any order when anyColumnOrder: the cells follow their column; a missing or extra column still fails', async () => {
  const expected = 'month,apples,pears\n2026-01,3,0\n2026-02,1,2\n';
  const swapped = 'month,pears,apples\n2026-01,0,3\n2026-02,2,1\n';
  assert.deepEqual(await compareCsv(swapped, expected, { ordered: true, anyColumnOrder: true, tolerance: 0 }), { ok: true });
  const strict = await compareCsv(swapped, expected, { ordered: true, tolerance: 0 });
  assert.ok(!strict.ok && /the header is/.test(strict.why), JSON.stringify(strict));
  // Swapping the header alone moves the values to the wrong column.
  const relabelled = await compareCsv('month,pears,apples\n2026-01,3,0\n2026-02,1,2\n', expected, { ordered: true, anyColumnOrder: true, tolerance: 0 });
  assert.ok(!relabelled.ok && /data row 1/.test(relabelled.why), JSON.stringify(relabelled));
  const missing = await compareCsv('month,apples\n2026-01,3\n2026-02,1\n', expected, { ordered: true, anyColumnOrder: true, tolerance: 0 });
  assert.ok(!missing.ok && /in any order/.test(missing.why), JSON.stringify(missing));
  const doubled = await compareCsv('month,apples,apples_1\n2026-01,3,0\n2026-02,1,2\n', expected, { ordered: true, anyColumnOrder: true, tolerance: 0 });
  assert.ok(!doubled.ok && /in any order/.test(doubled.why), JSON.stringify(doubled));
});

test('JSON equality: keys in any order, numbers within tolerance, arrays in order unless unorderedArrays, the first difference named by its path', () => {
  const expected = '{"total": 10.5, "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}], "note": null}';
  const options = { tolerance: 0, unorderedArrays: false };
  assert.deepEqual(compareJson('{"note": null, "customers": [{"orders": 2, "id": "c1"}, {"id": "c2", "orders": 1}], "total": 10.5}', expected, options), { ok: true });
  assert.deepEqual(compareJson('{"total": 10.50000001, "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}], "note": null}', expected, { ...options, tolerance: 1e-6 }), { ok: true });
  const cases: Array<[string, RegExp, { tolerance: number; unorderedArrays: boolean }?]> = [
    ['{"total": 10.6, "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}], "note": null}', /\$\.total is 10\.6, expected 10\.5/],
    ['{"total": "10.5", "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}], "note": null}', /\$\.total is string/],
    ['{"total": 10.5, "customers": [{"id": "c2", "orders": 1}, {"id": "c1", "orders": 2}], "note": null}', /\$\.customers\[0\]\.id is "c2", expected "c1"/],
    ['{"total": 10.5, "customers": [{"id": "c1", "orders": 2}], "note": null}', /\$\.customers has 1 items, expected 2/],
    ['{"total": 10.5, "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}]}', /\$ lacks the key\(s\) \["note"\]/],
    ['{"total": 10.5, "customers": [{"id": "c1", "orders": 2}, {"id": "c2", "orders": 1}], "note": null, "extra": 1}', /unexpected key\(s\) \["extra"\]/],
    ['{"total": 10.5,', /not valid JSON/],
    // A repeated item cannot stand in for a missing one.
    ['{"total": 10.5, "customers": [{"id": "c1", "orders": 2}, {"id": "c1", "orders": 2}], "note": null}', /customers\[1\].*not among the expected items/, { tolerance: 0, unorderedArrays: true }],
  ];
  for (const [actual, why, given] of cases) {
    const verdict = compareJson(actual, expected, given ?? options);
    assert.ok(!verdict.ok && why.test(verdict.why), `${actual}: ${JSON.stringify(verdict)}`);
  }
  assert.deepEqual(compareJson('{"total": 10.5, "customers": [{"id": "c2", "orders": 1}, {"id": "c1", "orders": 2}], "note": null}', expected, { tolerance: 0, unorderedArrays: true }), { ok: true });
  assert.ok(!compareJson('{"a b": 1}', '{"a b": 2}', options).ok && /\$\["a b"\] is 1/.test((compareJson('{"a b": 1}', '{"a b": 2}', options) as { why: string }).why));
});

test('a json check reads its expected value from a hidden file, and a content, csv or json check without one is refused by the schema', async () => {
  const [result] = await decideOutputChecks([{ type: 'json', path: 'out.json', expectedFile: 'expected/out.json' }], reading({ 'out.json': '[1, 2]' }), { 'expected/out.json': '[1, 3]' });
  assert.equal(result!.id, 'check[0]:json:out.json');
  assert.match(result!.message!, /\$\[1\] is 2, expected 3/);
  assert.equal(OutputCheck.safeParse({ type: 'json', path: 'out.json' }).success, false);
  assert.equal(OutputCheck.safeParse({ type: 'json', path: 'out.json', expected: '{}', unorderedArrays: true, tolerance: 1e-9 }).success, true);
});

test('what an agent produced is parsed within bounds: a YAML alias bomb, deep JSON or YAML, and an oversized file fail their check with why', async () => {
  const schema = { type: 'object' };
  const check = (type: 'json-schema' | 'yaml-schema', path: string) => OutputCheck.parse({ type, path, schema });
  const laughs = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]', ...Array.from({ length: 9 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array.from({ length: 10 }, () => `*${String.fromCharCode(97 + i)}`).join(',')}]`)].join('\n');
  const deepJson = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
  const deepYaml = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
  // Within the alias count, yet 60 uses of a 20,000-value list: 1.2 million values once expanded.
  const wide = `a: &a [${Array.from({ length: 20_000 }, () => '0').join(',')}]\nall: [${Array.from({ length: 60 }, () => '*a').join(',')}]\n`;
  const big = `{"a": "${'x'.repeat(AGENT_OUTPUT_BOUNDS.maxBytes)}"}`;
  const results = await decideOutputChecks(
    [check('yaml-schema', 'laughs.yaml'), check('json-schema', 'deep.json'), check('yaml-schema', 'deep.yaml'), check('yaml-schema', 'wide.yaml'), check('json-schema', 'big.json')],
    reading({ 'laughs.yaml': laughs, 'deep.json': deepJson, 'deep.yaml': deepYaml, 'wide.yaml': wide, 'big.json': big }),
    {},
  );
  assert.deepEqual(results.map((r) => r.outcome), ['failed', 'failed', 'failed', 'failed', 'failed']);
  assert.match(results[0]!.message!, /not valid YAML: .*alias/i);
  assert.match(results[1]!.message!, /not valid JSON: it nests deeper than 128 levels/);
  assert.match(results[2]!.message!, /not valid YAML: (it nests too deeply to parse|it nests deeper than 128 levels|Maximum call stack size exceeded)/);
  assert.match(results[3]!.message!, /not valid YAML: it holds more than 1000000 values/);
  assert.match(results[4]!.message!, /cannot be checked: it is \d+ bytes, above the 16777216 bytes read/);
  assert.match(compareJson(deepJson, '[]', { tolerance: 0, unorderedArrays: false }).ok ? '' : 'failed', /failed/);
  // A Markdown file past the bound fails the same way, and an ordinary one is still read.
  const [markdown] = await decideOutputChecks([OutputCheck.parse({ type: 'markdown', path: 'r.md', headings: ['# A'] })], reading({ 'r.md': `# A\n${'x'.repeat(AGENT_OUTPUT_BOUNDS.maxBytes)}` }), {});
  assert.match(markdown!.message!, /above the 16777216 bytes read/);
});
