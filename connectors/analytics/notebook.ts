import { parse as parseYaml } from 'yaml';
import { ConfigError, errorMessage } from '../../schemas/index.js';
import type { AnalyticsCatalog, QueryResult } from './catalog.js';
import { renderChartSvg } from './chart.js';

/**
 * A notebook is one documented SQL file:
 *
 *   -- # Title
 *   -- What the notebook answers (Markdown in comments).
 *   -- @query pass_rate_by_version
 *   -- ## A heading for this query
 *   -- What it shows and how to read it.
 *   -- @chart
 *   --   mark: {type: line, point: true}
 *   --   encoding:
 *   --     x: {field: policy_version, type: ordinal}
 *   --     y: {field: pass_rate, type: quantitative}
 *   SELECT ...;
 *
 * Each `@chart` is a Vega-Lite spec in YAML (the comment lines right after it that are indented by two
 * or more spaces after `--`), drawn over the rows of the query it belongs to. A query may have any number of charts, or none
 * (then its rows are shown as a table).
 */
export interface Notebook {
  readonly name: string;
  readonly title: string;
  readonly intro: string;
  readonly cells: readonly NotebookCell[];
}

export interface NotebookCell {
  readonly id: string;
  /** Markdown: the comments before the SQL. */
  readonly text: string;
  readonly charts: ReadonlyArray<Readonly<Record<string, unknown>>>;
  readonly sql: string;
  /** 1-based line of the `@query` directive, for error messages. */
  readonly line: number;
}

const QUERY = /^--\s*@query\s+([a-z][a-z0-9_]*)\s*$/;
const CHART = /^--\s*@chart\s*$/;
const CHART_LINE = /^--( {2,}.*)$/;

export function parseNotebook(name: string, text: string): Notebook {
  const lines = text.split(/\r?\n/);
  const where = (line: number): string => `notebook ${name}, line ${line}`;
  const header: string[] = [];
  const cells: NotebookCell[] = [];
  let i = 0;
  while (i < lines.length && !QUERY.test(lines[i]!)) {
    const line = lines[i]!;
    if (line.trim() && !line.startsWith('--')) throw new ConfigError(`${where(i + 1)}: SQL before the first "-- @query <name>"`);
    header.push(line.replace(/^--\s?/, ''));
    i++;
  }
  const titleLine = header.findIndex((line) => line.startsWith('# '));
  if (titleLine < 0) throw new ConfigError(`notebook ${name}: no title; start it with "-- # <title>"`);
  const title = header[titleLine]!.slice(2).trim();
  const intro = header.filter((_, index) => index !== titleLine).join('\n').trim();

  while (i < lines.length) {
    const id = QUERY.exec(lines[i]!)![1]!;
    const line = i + 1;
    if (cells.some((cell) => cell.id === id)) throw new ConfigError(`${where(line)}: query "${id}" is defined twice`);
    i++;
    const text: string[] = [];
    const charts: Record<string, unknown>[] = [];
    while (i < lines.length && lines[i]!.startsWith('--') && !QUERY.test(lines[i]!)) {
      if (CHART.test(lines[i]!)) {
        const chartLine = i + 1;
        const yaml: string[] = [];
        i++;
        while (i < lines.length && CHART_LINE.test(lines[i]!)) {
          yaml.push(CHART_LINE.exec(lines[i]!)![1]!);
          i++;
        }
        const indent = Math.min(...yaml.map((text) => text.length - text.trimStart().length));
        let spec: unknown;
        try {
          spec = parseYaml(yaml.map((text) => text.slice(indent)).join('\n'));
        } catch (error) {
          throw new ConfigError(`${where(chartLine)}: the chart is not valid YAML: ${errorMessage(error)}`);
        }
        if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new ConfigError(`${where(chartLine)}: a chart must be a Vega-Lite spec (a YAML mapping)`);
        if ('data' in spec) throw new ConfigError(`${where(chartLine)}: a chart gets its data from its query; remove "data"`);
        charts.push(spec as Record<string, unknown>);
        continue;
      }
      text.push(lines[i]!.replace(/^--\s?/, ''));
      i++;
    }
    const sql: string[] = [];
    while (i < lines.length && !QUERY.test(lines[i]!)) sql.push(lines[i++]!);
    const statement = sql.join('\n').trim().replace(/;\s*$/, '');
    if (!statement) throw new ConfigError(`${where(line)}: query "${id}" has no SQL`);
    cells.push({ id, text: text.join('\n').trim(), charts, sql: statement, line });
  }
  if (cells.length === 0) throw new ConfigError(`notebook ${name}: no "-- @query <name>" sections`);
  return { name, title, intro, cells };
}

export interface CellResult {
  readonly id: string;
  readonly result: QueryResult;
  /** Rows as objects with numbers as numbers: what the charts were drawn from. */
  readonly records: ReadonlyArray<Record<string, unknown>>;
  readonly svgs: readonly string[];
  readonly elapsedMs: number;
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$/;

/** DuckDB hands BIGINTs and DECIMALs over as strings (they may not fit a double); charts need numbers. */
export function recordsOf(result: QueryResult): Record<string, unknown>[] {
  const numeric = result.columns.map((_, index) => NUMERIC.test(result.types?.[index] ?? ''));
  return result.rows.map((row) => Object.fromEntries(result.columns.map((column, index) => [column, numeric[index] && typeof row[index] === 'string' ? Number(row[index]) : (row[index] ?? null)])));
}

/** Runs every query of a notebook and draws its charts. */
export async function runNotebook(catalog: AnalyticsCatalog, notebook: Notebook): Promise<CellResult[]> {
  const results: CellResult[] = [];
  for (const cell of notebook.cells) {
    const started = performance.now();
    let result: QueryResult;
    try {
      result = await catalog.query(cell.sql);
    } catch (error) {
      throw new ConfigError(`notebook ${notebook.name}, query "${cell.id}" (line ${cell.line}) failed: ${errorMessage(error)}`);
    }
    const records = recordsOf(result);
    const svgs: string[] = [];
    if (records.length > 0) {
      for (const [index, spec] of cell.charts.entries()) {
        try {
          svgs.push(await renderChartSvg(spec, records, { idPrefix: `${cell.id}-${index}` }));
        } catch (error) {
          throw new ConfigError(`notebook ${notebook.name}, chart ${index + 1} of query "${cell.id}" (line ${cell.line}): ${errorMessage(error)}`);
        }
      }
    }
    results.push({ id: cell.id, result, records, svgs, elapsedMs: performance.now() - started });
  }
  return results;
}

const escape = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** The small Markdown the notebooks use: headings, paragraphs, `- ` lists, `code` and **bold**. */
export function markdownToHtml(markdown: string): string {
  const inline = (text: string): string =>
    escape(text)
      .replace(/`([^`]+)`/g, '<code>$1</code>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  const html: string[] = [];
  for (const block of markdown.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((line) => line.trim());
    if (lines.length === 0) continue;
    const heading = /^(#{1,4})\s+(.*)$/.exec(lines[0]!);
    if (heading && lines.length === 1) {
      const level = heading[1]!.length + 1;
      html.push(`<h${level}>${inline(heading[2]!)}</h${level}>`);
    } else if (lines.every((line) => /^\s*- /.test(line))) {
      html.push(`<ul>${lines.map((line) => `<li>${inline(line.replace(/^\s*- /, ''))}</li>`).join('')}</ul>`);
    } else if (heading) {
      const level = heading[1]!.length + 1;
      html.push(`<h${level}>${inline(heading[2]!)}</h${level}>`, `<p>${inline(lines.slice(1).join(' '))}</p>`);
    } else {
      html.push(`<p>${inline(lines.join(' '))}</p>`);
    }
  }
  return html.join('\n');
}

const cellText = (value: unknown): string => (value === null || value === undefined ? '' : typeof value === 'number' ? String(Number.isInteger(value) ? value : Number(value.toPrecision(6))) : typeof value === 'object' ? JSON.stringify(value) : String(value));

function tableHtml(records: ReadonlyArray<Record<string, unknown>>, columns: readonly string[], limit: number): string {
  const head = `<tr>${columns.map((c) => `<th>${escape(c)}</th>`).join('')}</tr>`;
  const body = records
    .slice(0, limit)
    .map((record) => `<tr>${columns.map((c) => `<td>${escape(cellText(record[c]).slice(0, 120))}</td>`).join('')}</tr>`)
    .join('\n');
  const more = records.length > limit ? `<p class="note">first ${limit} of ${records.length} rows</p>` : '';
  return `<table>${head}\n${body}</table>${more}`;
}

export interface ReportContext {
  /** Shown in the header: where the data came from. */
  readonly source: string;
  readonly generatedAt: Date;
}

/**
 * A self-contained HTML report: no scripts to run, no network; charts are inline SVG. The rows behind
 * every query are embedded as JSON (`<script type="application/json" id="data-<query>">`) so a reader
 * (or a test) can check a chart against its data.
 */
export function notebookHtml(notebook: Notebook, results: readonly CellResult[], context: ReportContext): string {
  const sections = notebook.cells.map((cell, index) => {
    const result = results[index]!;
    const body =
      result.records.length === 0
        ? '<p class="empty">No rows: nothing in the store matches this query yet.</p>'
        : [...result.svgs.map((svg) => `<figure>${svg}</figure>`), tableHtml(result.records, result.result.columns, 30)].join('\n');
    return `<section id="${escape(cell.id)}">
${markdownToHtml(cell.text) || `<h2>${escape(cell.id)}</h2>`}
${body}
<details><summary>SQL (${result.records.length} rows, ${result.elapsedMs.toFixed(0)} ms)</summary><pre>${escape(cell.sql)}</pre></details>
<script type="application/json" id="data-${escape(cell.id)}">${JSON.stringify(result.records).replaceAll('<', '\\u003c')}</script>
</section>`;
  });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escape(notebook.title)}</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 920px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } .meta { color: #666; font-size: 0.9em; }
section { border-top: 1px solid #ddd; margin-top: 2em; padding-top: 0.5em; }
figure { margin: 1em 0; } table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; } th { background: #f5f5f5; }
code, pre { background: #f5f5f5; font-size: 0.9em; } pre { padding: 0.8em; overflow-x: auto; }
.empty { color: #8a6d3b; } .note { color: #666; font-size: 0.85em; }
</style>
</head>
<body>
<h1>${escape(notebook.title)}</h1>
<p class="meta">notebook <code>${escape(notebook.name)}</code> · data ${escape(context.source)} · generated ${context.generatedAt.toISOString()}</p>
${markdownToHtml(notebook.intro)}
${sections.join('\n')}
</body>
</html>
`;
}
