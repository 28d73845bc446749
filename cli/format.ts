import type { QueryResult } from '../connectors/analytics/index.js';

export type OutputFormat = 'table' | 'csv' | 'json';

const text = (value: unknown): string => (value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value));

export function formatResult(result: QueryResult, format: OutputFormat): string {
  if (format === 'json') {
    return result.rows.map((row) => JSON.stringify(Object.fromEntries(result.columns.map((c, i) => [c, row[i] ?? null])))).join('\n');
  }
  if (format === 'csv') {
    const cell = (value: unknown): string => {
      const s = text(value);
      return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
    };
    return [result.columns.map(cell).join(','), ...result.rows.map((row) => row.map(cell).join(','))].join('\n');
  }
  const cells = [result.columns.map(text), ...result.rows.map((row) => row.map((v) => text(v).slice(0, 60)))];
  const widths = result.columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]): string => row.map((c, i) => c.padEnd(widths[i]!)).join(' | ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('-+-'), ...cells.slice(1).map(line), `(${result.rows.length} rows)`].join('\n');
}
