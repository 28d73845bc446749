import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

/** IR version 8 with opset 17: every operator used here exists there, and onnxruntime-node runs both. */
const IR_VERSION = 8;
const OPSET = 17;

/** A dimension is fixed (a number) or named and left to the feeds (a string). */
export type Dim = number | string;

export type ElementType = 'float32' | 'int64';

const ELEMENT_TYPES: Record<ElementType, number> = { float32: onnx.TensorProto.DataType.FLOAT, int64: onnx.TensorProto.DataType.INT64 };

/**
 * Builds an ONNX graph node by node and encodes it as a ModelProto, so the project's models come from its
 * own code rather than from a downloaded file. Values are referred to by name; `op` returns its output's.
 */
export class GraphBuilder {
  private readonly nodes: InstanceType<typeof onnx.NodeProto>[] = [];
  private readonly inputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private readonly outputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private readonly initializers: InstanceType<typeof onnx.TensorProto>[] = [];
  private readonly names = new Set<string>();
  private counter = 0;

  constructor(private readonly name: string) {}

  input(name: string, shape: readonly Dim[], type: ElementType = 'float32'): string {
    this.claim(name);
    this.inputs.push(valueInfo(name, shape, type));
    return name;
  }

  /** A constant tensor stored in the model (a scalar when `shape` is []). */
  constant(values: number | readonly number[], shape: readonly number[] = [], type: ElementType = 'float32'): string {
    const data = typeof values === 'number' ? [values] : [...values];
    const size = shape.reduce((product, dim) => product * dim, 1);
    if (data.length !== size) throw new Error(`constant of shape [${shape.join(', ')}] needs ${size} values, got ${data.length}`);
    const name = this.fresh('const');
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims: [...shape],
        dataType: ELEMENT_TYPES[type],
        ...(type === 'float32' ? { floatData: data } : { int64Data: data }),
      }),
    );
    return name;
  }

  /** Appends one node; integer attributes only (axis, keepdims, transA, perm), which is all these graphs need. */
  op(opType: string, inputs: readonly string[], attributes: Readonly<Record<string, number | readonly number[]>> = {}): string {
    const output = this.fresh(opType.toLowerCase());
    this.nodes.push(
      onnx.NodeProto.create({
        name: output,
        opType,
        input: [...inputs],
        output: [output],
        attribute: Object.entries(attributes).map(([name, value]) => integerAttribute(opType, name, value)),
      }),
    );
    return output;
  }

  /** Exposes `value` as the graph output `name`. */
  output(name: string, value: string, shape: readonly Dim[], type: ElementType = 'float32'): void {
    this.claim(name);
    this.nodes.push(onnx.NodeProto.create({ name: `${name}/identity`, opType: 'Identity', input: [value], output: [name] }));
    this.outputs.push(valueInfo(name, shape, type));
  }

  encode(): Uint8Array {
    const graph = onnx.GraphProto.create({ name: this.name, node: this.nodes, input: this.inputs, output: this.outputs, initializer: this.initializers });
    const model = onnx.ModelProto.create({ irVersion: IR_VERSION, opsetImport: [{ domain: '', version: OPSET }], producerName: 'trialrun', graph });
    return onnx.ModelProto.encode(model).finish();
  }

  private claim(name: string): void {
    if (this.names.has(name)) throw new Error(`graph ${this.name} already has a value named ${name}`);
    this.names.add(name);
  }

  private fresh(prefix: string): string {
    const name = `${prefix}_${this.counter++}`;
    this.claim(name);
    return name;
  }
}

function valueInfo(name: string, shape: readonly Dim[], type: ElementType): InstanceType<typeof onnx.ValueInfoProto> {
  const dim = shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d }));
  return onnx.ValueInfoProto.create({ name, type: { tensorType: { elemType: ELEMENT_TYPES[type], shape: { dim } } } });
}

function integerAttribute(opType: string, name: string, value: number | readonly number[]): InstanceType<typeof onnx.AttributeProto> {
  const values = typeof value === 'number' ? [value] : value;
  if (!values.every(Number.isInteger)) throw new Error(`${opType}.${name}: only integer attributes are supported, got ${String(value)}`);
  return typeof value === 'number'
    ? onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INT, i: value })
    : onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INTS, ints: [...value] });
}
