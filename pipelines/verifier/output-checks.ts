import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2019Module from 'ajv/dist/2019.js';
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvModule from 'ajv';
import { parse as parseYaml } from 'yaml';
import { TabularFiles } from '../../connectors/files/index.js';
import { AGENT_OUTPUT_BOUNDS, errorMessage, parseBounded, parseJsonBounded, textBoundsProblem, type FileTree, type OutputCheck, type TestResult } from '../../schemas/index.js';

/**
 * Output checks are decided here, on the host, from text read back out of the grading sandbox: nothing the
 * agent's code does in there can take part in the comparison.
 */

/** What was read back for one check target: its text, or why there is none. */
export type ReadBack = { readonly text: string } | { readonly problem: string };

/** The target one check reads: a workspace path, or the command's stdout. */
export const checkTarget = (check: OutputCheck): string => (check.stdout ? 'stdout' : check.path!);

/** The id of the i-th check's result, e.g. `check[0]:csv:out/report.csv`, so a fraction counts checks. */
export const checkId = (check: OutputCheck, index: number): string => `check[${index}]:${check.type}:${checkTarget(check)}`;

type Verdict = { readonly ok: true } | { readonly ok: false; readonly why: string };
const pass: Verdict = { ok: true };
const fail = (why: string): Verdict => ({ ok: false, why });

const MESSAGE_CAP = 500;
const shown = (text: string): string => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);

/** The checks' results, one TestResult each, in order. `hidden` holds the task's hidden files (for `expectedFile`). */
export async function decideOutputChecks(checks: readonly OutputCheck[], read: (target: string) => ReadBack, hidden: FileTree): Promise<TestResult[]> {
  const results: TestResult[] = [];
  for (const [index, check] of checks.entries()) {
    const started = performance.now();
    const got = read(checkTarget(check));
    let verdict: Verdict;
    if ('problem' in got) verdict = fail(got.problem);
    else {
      try {
        verdict = await decide(check, got.text, hidden);
      } catch (error) {
        verdict = fail(`the check could not be decided: ${errorMessage(error)}`);
      }
    }
    results.push({
      id: checkId(check, index),
      outcome: verdict.ok ? 'passed' : 'failed',
      durationMs: performance.now() - started,
      message: verdict.ok ? null : verdict.why.slice(0, MESSAGE_CAP),
    });
  }
  return results;
}

function expectedOf(check: { expected?: string; expectedFile?: string }, hidden: FileTree): string | Verdict {
  if (check.expected !== undefined) return check.expected;
  const content = hidden[check.expectedFile!];
  return content ?? fail(`the expected file ${check.expectedFile} is not among the task's hidden files`);
}

/**
 * Most aliases one YAML document may resolve (the yaml package counts nested ones): a document that expands
 * exponentially ("billion laughs") fails here, one that expands within bounds is then counted by valueBoundsProblem.
 */
const MAX_YAML_ALIASES = 100;

/** The agent's YAML, parsed within AGENT_OUTPUT_BOUNDS and MAX_YAML_ALIASES. */
export const parseAgentYaml = (text: string) => parseBounded(text, AGENT_OUTPUT_BOUNDS, (source) => parseYaml(source, { maxAliasCount: MAX_YAML_ALIASES }) as unknown);

/** The agent's JSON, parsed within AGENT_OUTPUT_BOUNDS. */
export const parseAgentJson = (text: string) => parseJsonBounded(text, AGENT_OUTPUT_BOUNDS);

async function decide(check: OutputCheck, actual: string, hidden: FileTree): Promise<Verdict> {
  // Every parser below reads at most AGENT_OUTPUT_BOUNDS.maxBytes of what the agent produced.
  const long = textBoundsProblem(actual, AGENT_OUTPUT_BOUNDS);
  if (long !== null) return fail(`the output cannot be checked: ${long}`);
  switch (check.type) {
    case 'content': {
      const expected = expectedOf(check, hidden);
      return typeof expected === 'string' ? compareContent(actual, expected, check.normalise ?? 'trim') : expected;
    }
    case 'csv': {
      const expected = expectedOf(check, hidden);
      return typeof expected === 'string'
        ? compareCsv(actual, expected, { ordered: check.ordered ?? false, anyColumnOrder: check.anyColumnOrder ?? false, tolerance: check.tolerance ?? 0 })
        : expected;
    }
    case 'json': {
      const expected = expectedOf(check, hidden);
      return typeof expected === 'string' ? compareJson(actual, expected, { tolerance: check.tolerance ?? 0, unorderedArrays: check.unorderedArrays ?? false }) : expected;
    }
    case 'json-schema':
      return validateJson(check.schema, parseAgentJson(actual), 'JSON');
    case 'yaml-schema':
      return validateJson(check.schema, parseAgentYaml(actual), 'YAML');
    case 'markdown':
      return checkMarkdown(actual, check.headings, check.requireCodeBlock ?? false);
  }
}

// -- content -------------------------------------------------------------------------------------------------

type Normalise = 'exact' | 'trim' | 'whitespace' | 'lines-unordered';

export function normalised(text: string, how: Normalise): string {
  switch (how) {
    case 'exact':
      return text;
    case 'trim':
      return text.trim();
    case 'whitespace':
      return text.trim().split(/\s+/).join(' ');
    case 'lines-unordered':
      return text.split(/\r?\n/).map((line) => line.trimEnd()).filter((line) => line !== '').sort().join('\n');
  }
}

export function compareContent(actual: string, expected: string, how: Normalise): Verdict {
  const [a, e] = [normalised(actual, how), normalised(expected, how)];
  if (a === e) return pass;
  let at = 0;
  while (at < a.length && at < e.length && a[at] === e[at]) at++;
  return fail(`content differs (${how}) at character ${at}: expected ${shown(e.slice(at))}, got ${shown(a.slice(at))}`);
}

// -- CSV -------------------------------------------------------------------------------------------------------

interface Table {
  readonly header: readonly string[];
  readonly rows: ReadonlyArray<readonly string[]>;
}

/** Parses CSV text with the project's CSV reader (DuckDB's, through connectors/files): quoting, dialect and bad rows as it judges them. */
async function readCsv(text: string, files: TabularFiles, dir: string, name: string): Promise<Table> {
  const file = join(dir, `${name}.csv`);
  await writeFile(file, text);
  const header = (await files.columns(file, 'csv')) ?? [];
  const rows: string[][] = [];
  const rejects: string[] = [];
  await files.readRows(file, {
    format: 'csv',
    onRows: (batch) => {
      for (const { value } of batch) rows.push(header.map((column) => (value[column] === null || value[column] === undefined ? '' : String(value[column]))));
    },
    onReject: (reject) => rejects.push(`row ${reject.row}: ${reject.reason}`),
  });
  if (rejects.length > 0) throw new Error(`the ${name} CSV has rows that do not parse (${rejects.slice(0, 3).join('; ')})`);
  return { header, rows };
}

const numeric = (cell: string): number | null => {
  if (cell.trim() === '') return null;
  const value = Number(cell);
  return Number.isFinite(value) ? value : null;
};

function cellsEqual(a: string, e: string, tolerance: number): boolean {
  if (a === e) return true;
  const [x, y] = [numeric(a), numeric(e)];
  return x !== null && y !== null && Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(y));
}

const rowsEqual = (a: readonly string[], e: readonly string[], tolerance: number): boolean => a.length === e.length && a.every((cell, i) => cellsEqual(cell, e[i]!, tolerance));

/** The non-numeric cells of a row, which must match exactly: rows are only compared within the same key. */
const textKey = (row: readonly string[]): string => JSON.stringify(row.map((cell) => (numeric(cell) === null ? cell : null)));

/** The table with its columns in `header`'s order; null when its columns are not the same set. */
function withColumnsAs(table: Table, header: readonly string[]): Table | null {
  if (table.header.length !== header.length || new Set(table.header).size !== table.header.length) return null;
  const at = header.map((column) => table.header.indexOf(column));
  if (at.includes(-1)) return null;
  return { header, rows: table.rows.map((row) => at.map((i) => row[i]!)) };
}

/**
 * CSV equality: the same header (its columns in any order when `anyColumnOrder`), the same rows (in any order
 * unless `ordered`), numeric cells equal within a relative `tolerance` (so `1.0` equals `1`). Unordered rows are
 * matched within groups of equal text cells.
 */
export async function compareCsv(actual: string, expected: string, options: { ordered: boolean; anyColumnOrder?: boolean; tolerance: number }): Promise<Verdict> {
  const dir = await mkdtemp(join(tmpdir(), 'trialrun-csv-'));
  const files = await TabularFiles.open();
  try {
    let got: Table;
    try {
      got = await readCsv(actual, files, dir, 'produced');
    } catch (error) {
      return fail(`the produced file is not readable CSV: ${errorMessage(error)}`);
    }
    const want = await readCsv(expected, files, dir, 'expected');
    if (options.anyColumnOrder) {
      const reordered = withColumnsAs(got, want.header);
      if (reordered === null) return fail(`the columns are ${JSON.stringify(got.header)}, expected ${JSON.stringify(want.header)} in any order`);
      got = reordered;
    }
    if (JSON.stringify(got.header) !== JSON.stringify(want.header)) return fail(`the header is ${JSON.stringify(got.header)}, expected ${JSON.stringify(want.header)}`);
    if (got.rows.length !== want.rows.length) return fail(`${got.rows.length} data rows, expected ${want.rows.length}`);
    if (options.ordered) {
      const at = got.rows.findIndex((row, i) => !rowsEqual(row, want.rows[i]!, options.tolerance));
      return at === -1 ? pass : fail(`data row ${at + 1} is ${JSON.stringify(got.rows[at])}, expected ${JSON.stringify(want.rows[at])}`);
    }
    const pending = new Map<string, Array<readonly string[]>>();
    for (const row of want.rows) pending.set(textKey(row), [...(pending.get(textKey(row)) ?? []), row]);
    for (const row of got.rows) {
      const candidates = pending.get(textKey(row)) ?? [];
      const match = candidates.findIndex((candidate) => rowsEqual(row, candidate, options.tolerance));
      if (match === -1) return fail(`the row ${JSON.stringify(row)} is not among the expected rows${options.tolerance ? ` (tolerance ${options.tolerance})` : ''}`);
      candidates.splice(match, 1);
    }
    return pass;
  } finally {
    files.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// -- JSON ------------------------------------------------------------------------------------------------------

/** A JSON value as text, cut to 80 characters. */
const jsonShown = (value: unknown): string => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
};

const kindOf = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** Where two JSON values first differ (a JSON path such as `$.customers[2].total` and why), or null when they are equal. */
function jsonDifference(actual: unknown, expected: unknown, path: string, options: { tolerance: number; unorderedArrays: boolean }): string | null {
  if (kindOf(actual) !== kindOf(expected)) return `${path} is ${kindOf(actual)} ${jsonShown(actual)}, expected ${kindOf(expected)} ${jsonShown(expected)}`;
  if (typeof expected === 'number') {
    const equal = Math.abs((actual as number) - expected) <= options.tolerance * Math.max(1, Math.abs(expected));
    return equal ? null : `${path} is ${String(actual)}, expected ${expected}${options.tolerance ? ` (tolerance ${options.tolerance})` : ''}`;
  }
  if (Array.isArray(expected)) {
    const got = actual as unknown[];
    if (got.length !== expected.length) return `${path} has ${got.length} items, expected ${expected.length}`;
    if (!options.unorderedArrays) {
      for (const [i, item] of expected.entries()) {
        const difference = jsonDifference(got[i], item, `${path}[${i}]`, options);
        if (difference !== null) return difference;
      }
      return null;
    }
    // Each produced item takes one equal expected item, so a repeated item cannot stand in for a missing one.
    const pending = [...expected];
    for (const [i, item] of got.entries()) {
      const match = pending.findIndex((candidate) => jsonDifference(item, candidate, path, options) === null);
      if (match === -1) return `${path}[${i}] ${jsonShown(item)} is not among the expected items`;
      pending.splice(match, 1);
    }
    return null;
  }
  if (typeof expected === 'object' && expected !== null) {
    const [got, want] = [actual as Record<string, unknown>, expected as Record<string, unknown>];
    const missing = Object.keys(want).filter((key) => !Object.hasOwn(got, key));
    if (missing.length > 0) return `${path} lacks the key(s) ${JSON.stringify(missing.slice(0, 5))}`;
    const extra = Object.keys(got).filter((key) => !Object.hasOwn(want, key));
    if (extra.length > 0) return `${path} has unexpected key(s) ${JSON.stringify(extra.slice(0, 5))}`;
    for (const key of Object.keys(want)) {
      const difference = jsonDifference(got[key], want[key], `${path}${/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`}`, options);
      if (difference !== null) return difference;
    }
    return null;
  }
  return actual === expected ? null : `${path} is ${jsonShown(actual)}, expected ${jsonShown(expected)}`;
}

/** JSON equality: object keys in any order, numbers within a relative `tolerance`, arrays in order unless `unorderedArrays`. */
export function compareJson(actual: string, expected: string, options: { tolerance: number; unorderedArrays: boolean }): Verdict {
  const parsed = parseAgentJson(actual);
  if ('problem' in parsed) return fail(`the file is not valid JSON: ${parsed.problem}`);
  const got = parsed.value;
  const difference = jsonDifference(got, JSON.parse(expected) as unknown, '$', options);
  return difference === null ? pass : fail(`the JSON differs: ${difference}`);
}

// -- JSON Schema, YAML -----------------------------------------------------------------------------------------

/** The validator for the draft a schema names in `$schema`: 2020-12 when it names none, 2019-09, draft-07 (and -06). */
function validatorFor(schema: Record<string, unknown>) {
  const draft = typeof schema.$schema === 'string' ? schema.$schema : '';
  // A fresh validator per check: schemas with the same $id from different tasks must not collide.
  const options = { allErrors: true, strict: false };
  if (/draft-0[67]/.test(draft)) return new AjvModule.default(options);
  if (draft.includes('2019-09')) return new Ajv2019Module.default(options);
  return new Ajv2020Module.default(options);
}

function validateJson(schema: Record<string, unknown>, parsed: ReturnType<typeof parseAgentJson>, format: 'JSON' | 'YAML'): Verdict {
  if ('problem' in parsed) return fail(`the file is not valid ${format}: ${parsed.problem}`);
  const { value } = parsed;
  const ajv = validatorFor(schema);
  let validate;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    return fail(`the task's schema does not compile: ${errorMessage(error)}`);
  }
  if (validate(value)) return pass;
  return fail(`the ${format} does not match the schema: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
}

// -- Markdown --------------------------------------------------------------------------------------------------

interface MarkdownOutline {
  /** Headings as `## Text`, in document order, from ATX (`## Text`) and setext (`Text` over `---`) forms. */
  readonly headings: string[];
  /** Fenced code blocks that were closed. */
  readonly codeBlocks: number;
}

/** The CommonMark block structure this check needs: headings and fenced code blocks (whose contents are not headings). */
export function outline(markdown: string): MarkdownOutline {
  const headings: string[] = [];
  let codeBlocks = 0;
  let fence: string | null = null;
  let previous: string | null = null;
  for (const line of markdown.split(/\r?\n/)) {
    if (fence !== null) {
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') [fence, codeBlocks] = [null, codeBlocks + 1];
      continue;
    }
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (opening) {
      [fence, previous] = [opening[1]!, null];
      continue;
    }
    const atx = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) {
      headings.push(`${atx[1]} ${(atx[2] ?? '').trim()}`);
      previous = null;
      continue;
    }
    const setext = /^ {0,3}(=+|-+)[ \t]*$/.exec(line);
    if (setext && previous !== null && previous.trim() !== '') {
      headings.push(`${setext[1]!.startsWith('=') ? '#' : '##'} ${previous.trim()}`);
      previous = null;
      continue;
    }
    previous = line;
  }
  return { headings, codeBlocks };
}

const headingKey = (heading: string): string => heading.trim().split(/\s+/).join(' ');

export function checkMarkdown(markdown: string, required: readonly string[], requireCodeBlock: boolean): Verdict {
  const found = outline(markdown);
  let at = 0;
  for (const heading of required) {
    const next = found.headings.slice(at).findIndex((h) => headingKey(h) === headingKey(heading));
    if (next === -1) {
      const present = found.headings.some((h) => headingKey(h) === headingKey(heading));
      return fail(`the heading ${shown(heading)} is ${present ? 'out of order' : 'missing'}; the document's headings are ${JSON.stringify(found.headings.slice(0, 20))}`);
    }
    at += next + 1;
  }
  if (requireCodeBlock && found.codeBlocks === 0) return fail('the document has no fenced code block');
  return pass;
}
