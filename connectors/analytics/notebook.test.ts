import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { renderChartSvg } from './chart.js';
import { markdownToHtml, notebookHtml, parseNotebook, recordsOf } from './notebook.js';

const NOTEBOOK = `-- # Pass rates
--
-- Intro with \`code\`.

-- @query by_version
-- ## Per version
-- What it shows.
-- @chart
--   mark: {type: line, point: true}
--   encoding:
--     x: {field: v, type: quantitative}
--     y: {field: rate, type: quantitative}
-- More text after the chart.
SELECT 1 AS v, 0.5 AS rate;

-- @query plain
SELECT 2
`;

test('parses a notebook: title, intro, queries with their text, charts (YAML, indentation kept) and SQL', () => {
  const notebook = parseNotebook('pass', NOTEBOOK);
  assert.equal(notebook.title, 'Pass rates');
  assert.equal(notebook.intro, 'Intro with `code`.');
  assert.deepEqual(
    notebook.cells.map((c) => ({ id: c.id, text: c.text, sql: c.sql, line: c.line })),
    [
      { id: 'by_version', text: '## Per version\nWhat it shows.\nMore text after the chart.', sql: 'SELECT 1 AS v, 0.5 AS rate', line: 5 },
      { id: 'plain', text: '', sql: 'SELECT 2', line: 16 },
    ],
  );
  assert.deepEqual(notebook.cells[0]!.charts, [{ mark: { type: 'line', point: true }, encoding: { x: { field: 'v', type: 'quantitative' }, y: { field: 'rate', type: 'quantitative' } } }]);
  assert.deepEqual(notebook.cells[1]!.charts, []);
});

test('rejects malformed notebooks with the line and what is wrong', () => {
  assert.throws(() => parseNotebook('x', '-- @query a\nSELECT 1'), /notebook x: no title/);
  assert.throws(() => parseNotebook('x', '-- # T\nSELECT 1\n-- @query a\nSELECT 1'), /notebook x, line 2: SQL before the first/);
  assert.throws(() => parseNotebook('x', '-- # T\n-- @query a\n-- only text\n'), /line 2: query "a" has no SQL/);
  assert.throws(() => parseNotebook('x', '-- # T\n-- @query a\nSELECT 1\n-- @query a\nSELECT 2'), /line 4: query "a" is defined twice/);
  assert.throws(() => parseNotebook('x', '-- # T\n-- @query a\n-- @chart\n--   mark: [bar\nSELECT 1'), /line 3: the chart is not valid YAML/);
  assert.throws(() => parseNotebook('x', '-- # T\n-- @query a\n-- @chart\n--   data: {values: []}\nSELECT 1'), /line 3: a chart gets its data from its query/);
  assert.throws(() => parseNotebook('x', '-- # T\n'), /no "-- @query <name>" sections/);
});

test('every notebook shipped in notebooks/ parses and has at least one chart', () => {
  const dir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'notebooks');
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql'));
  assert.ok(files.length >= 7);
  for (const file of files) {
    const notebook = parseNotebook(file, readFileSync(join(dir, file), 'utf8'));
    assert.ok(notebook.cells.some((c) => c.charts.length > 0), `${file} draws a chart`);
    assert.ok(notebook.intro.length > 0, `${file} says what it answers`);
  }
});

test('turns numeric strings of numeric columns into numbers, and nothing else', () => {
  const records = recordsOf({ columns: ['n', 's', 'd'], types: ['BIGINT', 'VARCHAR', 'DECIMAL(18,3)'], rows: [['12', '12', '1.5']] });
  assert.deepEqual(records, [{ n: 12, s: '12', d: 1.5 }]);
});

test('renders a chart to SVG offline, with the data in each mark label and ids unique per chart', async () => {
  const spec = { mark: { type: 'bar' }, encoding: { x: { field: 'kind', type: 'nominal' }, y: { field: 'n', type: 'quantitative' } } };
  const svg = await renderChartSvg(spec, [{ kind: 'a', n: 3 }, { kind: 'b', n: 5 }], { idPrefix: 'c1' });
  assert.match(svg, /^<svg/);
  assert.match(svg, /aria-label="kind: a; n: 3"/);
  assert.match(svg, /aria-label="kind: b; n: 5"/);
  for (const [, id] of svg.matchAll(/\bid="([^"]+)"/g)) assert.ok(id!.startsWith('c1-'), id);
});

test('writes self-contained HTML: escaped text, markdown, an empty-result note, embedded rows', () => {
  const notebook = parseNotebook('n', '-- # A <b> title\n-- @query q\n-- **Bold** and `x`\n-- - one\nSELECT 1');
  const html = notebookHtml(notebook, [{ id: 'q', result: { columns: ['a'], rows: [] }, records: [], svgs: [], elapsedMs: 1 }], { source: '/data', generatedAt: new Date(0) });
  assert.match(html, /<h1>A &lt;b&gt; title<\/h1>/);
  assert.match(html, /No rows/);
  assert.match(html, /<script type="application\/json" id="data-q">\[\]<\/script>/);
  assert.equal(markdownToHtml('## Head\n\n**Bold** and `x`\n\n- one\n- two'), '<h3>Head</h3>\n<p><strong>Bold</strong> and <code>x</code></p>\n<ul><li>one</li><li>two</li></ul>');
});
