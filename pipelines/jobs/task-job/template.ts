import { ConfigError, TrialrunError } from '../../../schemas/index.js';

const FILTERS = {
  /** `HumanEval/12` -> `humaneval-12`: lower case, runs of other characters become one '-'. */
  slug: (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, ''),
  lower: (text: string) => text.toLowerCase(),
  trim: (text: string) => text.trim(),
} as const;
type FilterName = keyof typeof FILTERS;

type Part = { readonly text: string } | { readonly column: string; readonly optional: boolean; readonly filters: readonly FilterName[] };

/**
 * Thrown while rendering when a row lacks a column the template uses; the row is rejected with this reason. Never
 * retried. Not a ConfigError: the job file is fine, one row of the data is not, and the job goes on without it.
 */
export class MissingColumn extends TrialrunError {
  constructor(readonly column: string) {
    super(`column "${column}" is missing or empty`);
  }
}

/**
 * A mapping template: literal text with `{column}` or `{column|filter|...}` holes (filters: slug, lower,
 * trim); `{column?}` renders as nothing where the row lacks the column; `{{` and `}}` stand for literal
 * braces. Compiled once per job, rendered once per row.
 */
export class Template {
  private constructor(
    readonly source: string,
    private readonly parts: readonly Part[],
  ) {}

  /** @param field names the mapping field in errors, e.g. `mapping.id`. */
  static compile(source: string, field: string): Template {
    const parts: Part[] = [];
    let text = '';
    for (let i = 0; i < source.length; i++) {
      const char = source[i]!;
      if ((char === '{' || char === '}') && source[i + 1] === char) {
        text += char;
        i++;
        continue;
      }
      if (char === '}') throw new ConfigError(`${field}: unmatched "}" at position ${i} in "${source}" (write "}}" for a literal brace)`);
      if (char !== '{') {
        text += char;
        continue;
      }
      const end = source.indexOf('}', i);
      if (end < 0) throw new ConfigError(`${field}: unclosed "{" at position ${i} in "${source}"`);
      const [hole = '', ...filters] = source.slice(i + 1, end).split('|').map((piece) => piece.trim());
      const optional = hole.endsWith('?');
      const column = optional ? hole.slice(0, -1).trim() : hole;
      if (!column) throw new ConfigError(`${field}: empty column name at position ${i} in "${source}"`);
      for (const filter of filters) {
        if (!(filter in FILTERS)) throw new ConfigError(`${field}: unknown filter "${filter}" in "${source}" (filters: ${Object.keys(FILTERS).join(', ')})`);
      }
      if (text) parts.push({ text });
      text = '';
      parts.push({ column, optional, filters: filters as FilterName[] });
      i = end;
    }
    if (text) parts.push({ text });
    return new Template(source, parts);
  }

  /** Only optional holes: renders as nothing when the row has none of them, which means "not given". */
  get optional(): boolean {
    return this.parts.length > 0 && this.parts.every((part) => 'column' in part && part.optional);
  }

  /** Columns the template needs (its optional holes left out). */
  get columns(): string[] {
    return this.parts.flatMap((part) => ('column' in part && !part.optional ? [part.column] : []));
  }

  /** Throws MissingColumn when a column that is not optional is absent, null or an empty string. */
  render(row: Readonly<Record<string, unknown>>): string {
    let out = '';
    for (const part of this.parts) {
      if ('text' in part) {
        out += part.text;
        continue;
      }
      // Own columns only: a row without a column named "constructor" must not render Object.prototype's.
      const value = Object.hasOwn(row, part.column) ? row[part.column] : undefined;
      if (value === undefined || value === null || value === '') {
        if (part.optional) continue;
        throw new MissingColumn(part.column);
      }
      let text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
      for (const filter of part.filters) text = FILTERS[filter](text);
      out += text;
    }
    return out;
  }
}
