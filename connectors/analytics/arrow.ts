import {
  Bool,
  Field,
  Float64,
  Int64,
  List,
  Struct,
  Table,
  TimestampMillisecond,
  Utf8,
  makeData,
  makeVector,
  type Data,
  type DataType,
} from 'apache-arrow';
import type { CellValue, Column, ColumnType, ScalarType, ScalarValue, StructField } from './tables.js';

const SCALAR_TYPES: Record<ScalarType, () => DataType> = {
  utf8: () => new Utf8(),
  int64: () => new Int64(),
  float64: () => new Float64(),
  bool: () => new Bool(),
  timestamp: () => new TimestampMillisecond(),
};

export function arrowType(type: ColumnType): DataType {
  if (typeof type === 'string') return SCALAR_TYPES[type]();
  const item = typeof type.listOf === 'string' ? SCALAR_TYPES[type.listOf]() : structType(type.listOf);
  return new List(new Field('item', item, true));
}

const structType = (fields: readonly StructField[]): Struct => new Struct(fields.map((field) => new Field(field.name, SCALAR_TYPES[field.type](), true)));

/** Validity bitmap (bit set = present) and the null count; undefined bitmap when nothing is null. */
function validity(values: readonly unknown[]): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  let nullCount = 0;
  const bitmap = new Uint8Array((values.length + 7) >> 3);
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null || values[i] === undefined) nullCount++;
    else bitmap[i >> 3]! |= 1 << (i & 7);
  }
  return { nullBitmap: nullCount ? bitmap : undefined, nullCount };
}

const where = (column: string, row: number): string => `column "${column}", row ${row}`;

function toEpochMs(value: ScalarValue, column: string, row: number): bigint {
  const ms = typeof value === 'string' ? Date.parse(value) : Number(value);
  if (!Number.isFinite(ms)) throw new TypeError(`${where(column, row)}: "${String(value)}" is not a time`);
  return BigInt(Math.trunc(ms));
}

/**
 * Builds one column's Arrow data straight into typed buffers. apache-arrow's generic builders cost a few
 * microseconds per string; the sink spends its time decoding records, not re-boxing their values.
 */
function scalarData(type: ScalarType, values: readonly ScalarValue[], column: string): Data {
  const length = values.length;
  const { nullBitmap, nullCount } = validity(values);
  switch (type) {
    case 'utf8': {
      const offsets = new Int32Array(length + 1);
      let bytes = 0;
      for (let i = 0; i < length; i++) {
        const value = values[i];
        if (value !== null && value !== undefined) bytes += Buffer.byteLength(String(value), 'utf8');
        offsets[i + 1] = bytes;
      }
      if (bytes > 0x7fffffff) throw new RangeError(`${column}: ${bytes} bytes of text exceed one Arrow string column; roll files smaller`);
      const data = Buffer.allocUnsafe(bytes);
      for (let i = 0; i < length; i++) {
        const value = values[i];
        if (value !== null && value !== undefined) data.write(String(value), offsets[i]!, 'utf8');
      }
      return makeData({ type: new Utf8(), length, nullCount, nullBitmap, valueOffsets: offsets, data: new Uint8Array(data.buffer, data.byteOffset, data.length) });
    }
    case 'int64':
    case 'timestamp': {
      const data = new BigInt64Array(length);
      for (let i = 0; i < length; i++) {
        const value = values[i];
        if (value === null || value === undefined) continue;
        if (type === 'timestamp') data[i] = toEpochMs(value, column, i);
        else if (typeof value === 'bigint') data[i] = value;
        else if (typeof value === 'number' && Number.isInteger(value)) data[i] = BigInt(value);
        else throw new TypeError(`${where(column, i)}: ${String(value)} is not a whole number`);
      }
      const arrow = type === 'timestamp' ? new TimestampMillisecond() : new Int64();
      return makeData({ type: arrow as Int64, length, nullCount, nullBitmap, data });
    }
    case 'float64': {
      const data = new Float64Array(length);
      for (let i = 0; i < length; i++) {
        const value = values[i];
        if (value !== null && value !== undefined) data[i] = Number(value);
      }
      return makeData({ type: new Float64(), length, nullCount, nullBitmap, data });
    }
    case 'bool': {
      const data = new Uint8Array((length + 7) >> 3);
      for (let i = 0; i < length; i++) if (values[i] === true) data[i >> 3]! |= 1 << (i & 7);
      return makeData({ type: new Bool(), length, nullCount, nullBitmap, data });
    }
  }
}

function listData(type: Exclude<ColumnType, ScalarType>, values: readonly CellValue[], column: string): Data {
  const length = values.length;
  const { nullBitmap, nullCount } = validity(values);
  const offsets = new Int32Array(length + 1);
  const items: Array<ScalarValue | Readonly<Record<string, ScalarValue>>> = [];
  for (let i = 0; i < length; i++) {
    const value = values[i];
    if (value !== null && value !== undefined) {
      if (!Array.isArray(value)) throw new TypeError(`${where(column, i)}: expected a list`);
      for (const item of value as ReadonlyArray<ScalarValue | Record<string, ScalarValue>>) items.push(item);
    }
    offsets[i + 1] = items.length;
  }
  let child: Data;
  if (typeof type.listOf === 'string') {
    child = scalarData(type.listOf, items as ScalarValue[], `${column}[]`);
  } else {
    const structs = items as ReadonlyArray<Readonly<Record<string, ScalarValue>> | null>;
    const children = type.listOf.map((field) => scalarData(field.type, structs.map((s) => s?.[field.name] ?? null), `${column}[].${field.name}`));
    const valid = validity(structs);
    child = makeData({ type: structType(type.listOf), length: structs.length, nullCount: valid.nullCount, nullBitmap: valid.nullBitmap, children });
  }
  return makeData({ type: arrowType(type) as List, length, nullCount, nullBitmap, valueOffsets: offsets, child });
}

/** Builds an Arrow table from rows with explicit column types (no inference: null-only columns stay typed). */
export function toArrowTable<R>(columns: readonly Column<R>[], rows: readonly R[]): Table {
  const vectors = Object.fromEntries(
    columns.map((column) => {
      const values = rows.map((row) => column.value(row));
      const data = typeof column.type === 'string' ? scalarData(column.type, values as ScalarValue[], column.name) : listData(column.type, values, column.name);
      return [column.name, makeVector(data)];
    }),
  );
  return new Table(vectors);
}
