import { createHash } from 'node:crypto';
import { ValidationError } from '../../schemas/index.js';

/**
 * A self-describing tensor file: the 8-byte magic, a little-endian u32 header length, a JSON header
 * (what the file is, its metadata, each tensor's name and shape, dtype float32), zero padding to a
 * 4-byte boundary, then each tensor's float32 values (little-endian) in header order.
 */
const MAGIC = Buffer.from('TRTENSOR', 'ascii');
const PREFIX_BYTES = MAGIC.length + 4;
/** A header is names, shapes and feature names: far below this; a bigger claim means a corrupt file. */
const MAX_HEADER_BYTES = 1 << 20;

export interface TensorEntry {
  readonly name: string;
  readonly shape: readonly number[];
}

export interface TensorFileHeader<Meta> {
  /** What the file holds, e.g. 'onnx-repair/params'; checked on read. */
  readonly kind: string;
  readonly dtype: 'float32';
  readonly meta: Meta;
  readonly tensors: readonly TensorEntry[];
}

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export function encodeTensorFile<Meta>(kind: string, meta: Meta, tensors: readonly (TensorEntry & { readonly data: Float32Array })[]): Buffer {
  for (const tensor of tensors) {
    const size = tensor.shape.reduce((product, dim) => product * dim, 1);
    if (tensor.data.length !== size) throw new Error(`tensor ${tensor.name} has ${tensor.data.length} values for shape [${tensor.shape.join(', ')}]`);
  }
  const header: TensorFileHeader<Meta> = { kind, dtype: 'float32', meta, tensors: tensors.map(({ name, shape }) => ({ name, shape: [...shape] })) };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const dataStart = align4(PREFIX_BYTES + headerBytes.length);
  const out = Buffer.alloc(dataStart + tensors.reduce((sum, t) => sum + t.data.length * 4, 0));
  MAGIC.copy(out, 0);
  out.writeUInt32LE(headerBytes.length, MAGIC.length);
  headerBytes.copy(out, PREFIX_BYTES);
  let offset = dataStart;
  for (const { data } of tensors) {
    for (const value of data) offset = out.writeFloatLE(value, offset);
  }
  return out;
}

/**
 * Reads a tensor file, refusing (with every reason it can name) bytes that are not one, that are of
 * another kind, that are cut short or too long, whose sha256 differs from `expectedSha256`, or that hold
 * values that are not finite.
 */
export function decodeTensorFile<Meta>(bytes: Uint8Array, kind: string, expectedSha256?: string): { header: TensorFileHeader<Meta>; tensors: Map<string, Float32Array> } {
  const what = `a ${kind} artifact`;
  const fail = (issue: string): never => {
    throw new ValidationError(what, [issue]);
  };
  if (expectedSha256 !== undefined) {
    const actual = sha256Hex(bytes);
    if (actual !== expectedSha256) fail(`sha256 is ${actual}, expected ${expectedSha256}`);
  }
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < PREFIX_BYTES || !buffer.subarray(0, MAGIC.length).equals(MAGIC)) fail(`does not start with ${MAGIC.toString('ascii')}`);
  const headerLength = buffer.readUInt32LE(MAGIC.length);
  if (headerLength > MAX_HEADER_BYTES || PREFIX_BYTES + headerLength > buffer.length) fail(`header length ${headerLength} runs past the ${buffer.length} bytes`);
  let header: TensorFileHeader<Meta>;
  try {
    header = JSON.parse(buffer.subarray(PREFIX_BYTES, PREFIX_BYTES + headerLength).toString('utf8')) as TensorFileHeader<Meta>;
  } catch {
    return fail('header is not JSON');
  }
  if (header.kind !== kind) fail(`holds ${String(header.kind)}, not ${kind}`);
  if (header.dtype !== 'float32') fail(`dtype is ${String(header.dtype)}, not float32`);
  if (!Array.isArray(header.tensors)) fail('header lists no tensors');
  const tensors = new Map<string, Float32Array>();
  let offset = align4(PREFIX_BYTES + headerLength);
  for (const entry of header.tensors) {
    if (typeof entry?.name !== 'string' || !Array.isArray(entry.shape) || !entry.shape.every((d) => Number.isInteger(d) && d >= 0)) fail(`tensor entry ${JSON.stringify(entry)} is malformed`);
    const size = entry.shape.reduce((product, dim) => product * dim, 1);
    if (offset + size * 4 > buffer.length) fail(`tensor ${entry.name} runs past the end of the ${buffer.length} bytes`);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) data[i] = buffer.readFloatLE(offset + i * 4);
    const bad = data.findIndex((value) => !Number.isFinite(value));
    if (bad >= 0) fail(`tensor ${entry.name} holds a non-finite value at index ${bad}`);
    tensors.set(entry.name, data);
    offset += size * 4;
  }
  if (offset !== buffer.length) fail(`${buffer.length - offset} bytes follow the last tensor`);
  return { header, tensors };
}

const align4 = (n: number): number => (n + 3) & ~3;
