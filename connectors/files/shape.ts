/**
 * The most `limits.maxRowDepth` may allow. Rows are walked downstream by code that recurses (JSON.stringify,
 * Python's json module, zod, DuckDB's value conversion), each with a stack bound far above this; rows are
 * measured here, without recursion, before any of them sees the row.
 */
export const MAX_ROW_DEPTH = 256;

export interface RowShape {
  /** Levels of arrays and objects: a scalar is 0, a flat object 1, an object holding a list 2. */
  readonly depth: number;
  /** UTF-8 bytes of every string in the value, nested ones included (0 unless asked for). */
  readonly textBytes: number;
}

/**
 * Measures a JSON-like value with an explicit stack, so a row nested a million levels deep is measured, not
 * a stack overflow. Linear in the value's size; a flat row costs a few property reads.
 */
export function measureRow(value: unknown, options: { textBytes?: boolean } = {}): RowShape {
  const countText = options.textBytes ?? false;
  let depth = 0;
  let textBytes = 0;
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const item = values.pop();
    const level = depths.pop()!;
    if (typeof item === 'string') {
      if (countText) textBytes += Buffer.byteLength(item, 'utf8');
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (ArrayBuffer.isView(item)) {
      if (level + 1 > depth) depth = level + 1;
      continue;
    }
    if (level + 1 > depth) depth = level + 1;
    const children = Array.isArray(item) ? item : Object.values(item);
    for (const child of children) {
      if (child !== null && (typeof child === 'object' || (countText && typeof child === 'string'))) {
        values.push(child);
        depths.push(level + 1);
      }
    }
  }
  return { depth, textBytes };
}
