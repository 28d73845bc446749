import { z } from 'zod';
import type { Mapping } from './spec.js';
import { MissingColumn, Template } from './template.js';

const TaskId = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"');
const ModuleFile = z.string().regex(/^[A-Za-z_]\w*\.py$/, 'must be a Python module file name such as "intervals.py"');
const Tags = z.array(z.string().min(1)).default([]);
// CSV cells are text; a whole number written as text is still a priority.
const Priority = z.preprocess((value) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value), z.number().int()).optional();
const Split = z.enum(['train', 'eval']).optional();
// JSON can escape half a surrogate pair ("\ud800"); UTF-8 cannot carry one, so such a task would change on its way into a sandbox.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const Text = z
  .string()
  .min(1)
  .refine((text) => !LONE_SURROGATE.test(text), 'holds a lone surrogate (such as "\\ud800"), which is not text');
const Code = Text.refine((text) => !text.includes('\u0000'), 'holds a NUL character, which Python refuses in source code');

/** What every row has, finished task or solution to derive tasks from. */
const RowBase = {
  id: TaskId,
  title: Text,
  description: Text,
  module: ModuleFile,
  visible_tests: Code,
  hidden_tests: Code,
  tags: Tags,
  /** @default the job's priority.default */
  priority: Priority,
  /** @default assigned by the job's split section */
  split: Split,
  /** @default the id */
  family: z.string().min(1).optional(),
};

/** A finished program-repair task row (the bundled `tasks/repair-bundle.jsonl` format, plus an optional family). */
export const RepairTaskRow = z.object({ ...RowBase, buggy_source: Code, fixed_source: Code });
export type RepairTaskRow = z.infer<typeof RepairTaskRow>;

/** Correct code with pytest tests, from which repair tasks are derived. */
export const SolutionRow = z.object({ ...RowBase, source: Code });
export type SolutionRow = z.infer<typeof SolutionRow>;

/** What the test converter needs for one solution row whose tests are not pytest files yet. */
export type TestsRequest =
  | { readonly style: 'check-function'; readonly code: string; readonly entry_point: string; readonly visible_fraction: number }
  | { readonly style: 'assert-list'; readonly asserts: unknown; readonly setup: string; readonly visible_fraction: number };

export type MappedRow =
  | { readonly ok: true; readonly fields: Record<string, unknown>; readonly tests: TestsRequest | null }
  | { readonly ok: false; readonly reason: string };

function tagsOf(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (text.startsWith('[') && text.endsWith(']')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // DuckDB writes lists to CSV as `[a, b]`, without quotes.
      return text.slice(1, -1).split(',').map((tag) => tag.trim()).filter(Boolean);
    }
  }
  return text ? text.split(/[,;]/).map((tag) => tag.trim()).filter(Boolean) : [];
}

/**
 * Applies a job's column mapping to source rows: renders each template, copies the plain columns (tags,
 * priority, split), and leaves validation to the row schemas so every problem names its field.
 */
export class RowMapper {
  private readonly templates: ReadonlyArray<readonly [string, Template]>;
  private readonly plainColumns: ReadonlyArray<readonly [string, string]>;
  private readonly testTemplates: ReadonlyArray<readonly [string, Template]>;

  constructor(readonly mapping: Mapping) {
    const compile = (field: string, source: string): readonly [string, Template] => [field, Template.compile(source, `mapping.${field}`)];
    const common = [compile('id', mapping.id), compile('title', mapping.title), compile('description', mapping.description), compile('module', mapping.module)];
    if (mapping.family) common.push(compile('family', mapping.family));
    if (mapping.kind === 'repair') {
      this.templates = [
        ...common,
        compile('buggy_source', mapping.buggySource),
        compile('fixed_source', mapping.fixedSource),
        compile('visible_tests', mapping.visibleTests),
        compile('hidden_tests', mapping.hiddenTests),
      ];
      this.testTemplates = [];
    } else {
      this.templates = [...common, compile('source', mapping.source)];
      const tests = mapping.tests;
      this.testTemplates =
        tests.style === 'pytest'
          ? [compile('visible_tests', tests.visible), compile('hidden_tests', tests.hidden)]
          : tests.style === 'check-function'
            ? [
                [`tests.code`, Template.compile(tests.code, 'mapping.tests.code')],
                [`tests.entryPoint`, Template.compile(tests.entryPoint, 'mapping.tests.entryPoint')],
              ]
            : tests.setup
              ? [[`tests.setup`, Template.compile(tests.setup, 'mapping.tests.setup')]]
              : [];
    }
    this.plainColumns = (['tags', 'priority', 'split'] as const).flatMap((field) => (mapping[field] ? [[field, mapping[field]] as const] : []));
  }

  /** Columns a row must have, each with the mapping field that needs it (for checking CSV and Parquet headers up front). */
  requiredColumns(): Map<string, string> {
    const required = new Map<string, string>();
    for (const [field, template] of [...this.templates, ...this.testTemplates]) for (const column of template.columns) if (!required.has(column)) required.set(column, `mapping.${field.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}`);
    if (this.mapping.kind === 'solution' && this.mapping.tests.style === 'assert-list') required.set(this.mapping.tests.asserts, 'mapping.tests.asserts');
    return required;
  }

  map(value: Readonly<Record<string, unknown>>): MappedRow {
    const fields: Record<string, unknown> = {};
    try {
      for (const [field, template] of this.templates) {
        const text = template.render(value);
        // An optional field whose columns are all absent is left out, so the row schema's default applies.
        if (text !== '' || !template.optional) fields[field] = text;
      }
      for (const [field, column] of this.plainColumns) {
        const cell = Object.hasOwn(value, column) ? value[column] : undefined;
        if (cell !== undefined && cell !== null && cell !== '') fields[field] = field === 'tags' ? tagsOf(cell) : cell;
      }
      if (this.mapping.kind === 'repair') return { ok: true, fields, tests: null };
      const tests = this.mapping.tests;
      if (tests.style === 'pytest') {
        for (const [field, template] of this.testTemplates) fields[field] = template.render(value);
        return { ok: true, fields, tests: null };
      }
      if (tests.style === 'check-function') {
        const [[, code], [, entryPoint]] = this.testTemplates as [readonly [string, Template], readonly [string, Template]];
        return { ok: true, fields, tests: { style: 'check-function', code: code.render(value), entry_point: entryPoint.render(value), visible_fraction: tests.visibleFraction } };
      }
      const asserts = Object.hasOwn(value, tests.asserts) ? value[tests.asserts] : undefined;
      if (asserts === undefined || asserts === null || asserts === '') throw new MissingColumn(tests.asserts);
      const setup = this.testTemplates[0]?.[1].render(value) ?? '';
      return { ok: true, fields, tests: { style: 'assert-list', asserts, setup, visible_fraction: tests.visibleFraction } };
    } catch (error) {
      if (error instanceof MissingColumn) return { ok: false, reason: error.message };
      throw error;
    }
  }
}
