import { ConfigError, ValidationError, wholeNumber } from '../../schemas/index.js';
import { seededRandom } from '../types.js';
import { decodeTensorFile, encodeTensorFile, sha256Hex } from './artifact.js';
import { ONNX_REPAIR_FEATURE_NAMES } from './features.js';
import { PARAM_DIMS, PARAM_NAMES, type ParamName } from './graphs.js';

export const ONNX_REPAIR_POLICY = 'onnx-repair';

export type ParamTensors = Readonly<Record<ParamName, Float32Array>>;

/** The MLP's weights (row-major float32) with the feature names they were trained on. */
export interface OnnxParams {
  readonly featureNames: readonly string[];
  readonly hiddenSize: number;
  readonly tensors: ParamTensors;
}

/** Adam's step count and moments, shaped like the parameters. */
export interface OnnxAdamState {
  readonly step: number;
  readonly m: ParamTensors;
  readonly v: ParamTensors;
}

export interface InitialParamsOptions {
  /** Hidden units of the MLP. @default 32 */
  hiddenSize?: number;
}

const PARAMS_KIND = `${ONNX_REPAIR_POLICY}/params`;
const ADAM_KIND = `${ONNX_REPAIR_POLICY}/adam`;
const MAX_HIDDEN = 4096;

export function paramShape(name: ParamName, featureCount: number, hiddenSize: number): number[] {
  return PARAM_DIMS[name].map((dim) => (dim === 'features' ? featureCount : hiddenSize));
}

const zeros = (featureCount: number, hiddenSize: number): ParamTensors =>
  Object.fromEntries(PARAM_NAMES.map((name) => [name, new Float32Array(paramShape(name, featureCount, hiddenSize).reduce((a, b) => a * b, 1))])) as Record<
    ParamName,
    Float32Array
  >;

/**
 * The untrained policy: random hidden weights (Xavier-scaled, from `seed`) and zero output and skip
 * weights, so every candidate scores the same and the first policy picks uniformly, while the output
 * weights still get a gradient from the first batch (the hidden units differ across candidates).
 */
export function initialParams(seed: string, options: InitialParamsOptions = {}): OnnxParams {
  const hiddenSize = options.hiddenSize ?? 32;
  wholeNumber('InitialParamsOptions.hiddenSize', hiddenSize, { min: 1, max: MAX_HIDDEN });
  const featureCount = ONNX_REPAIR_FEATURE_NAMES.length;
  const random = seededRandom(seed);
  const gaussian = (): number => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const tensors = zeros(featureCount, hiddenSize);
  const scale = Math.sqrt(2 / (featureCount + hiddenSize));
  for (let i = 0; i < tensors.hiddenWeights.length; i++) tensors.hiddenWeights[i] = gaussian() * scale;
  return { featureNames: ONNX_REPAIR_FEATURE_NAMES, hiddenSize, tensors };
}

export function freshAdamState(params: OnnxParams): OnnxAdamState {
  return { step: 0, m: zeros(params.featureNames.length, params.hiddenSize), v: zeros(params.featureNames.length, params.hiddenSize) };
}

interface ParamsMeta {
  readonly policyId: string;
  readonly featureNames: readonly string[];
  readonly hiddenSize: number;
}

/** The checkpoint artifact's bytes; its sha256 (`sha256Hex`) is what rollout workers verify. */
export function serializeParams(params: OnnxParams): Buffer {
  checkParams(params, 'params');
  const meta: ParamsMeta = { policyId: ONNX_REPAIR_POLICY, featureNames: params.featureNames, hiddenSize: params.hiddenSize };
  return encodeTensorFile(PARAMS_KIND, meta, tensorList(params.tensors, params.featureNames.length, params.hiddenSize));
}

/**
 * Loads a params artifact, verifying its sha256 when given, and refusing parameters trained on features
 * other than the ones this build computes (`expectedFeatures`, by default ONNX_REPAIR_FEATURE_NAMES).
 */
export function parseParams(bytes: Uint8Array, expectedSha256?: string, expectedFeatures: readonly string[] = ONNX_REPAIR_FEATURE_NAMES): OnnxParams {
  const { header, tensors } = decodeTensorFile<ParamsMeta>(bytes, PARAMS_KIND, expectedSha256);
  const { policyId, featureNames, hiddenSize } = header.meta ?? ({} as Partial<ParamsMeta>);
  if (policyId !== ONNX_REPAIR_POLICY) throw new ValidationError(`a ${PARAMS_KIND} artifact`, [`is for policy ${String(policyId)}, not ${ONNX_REPAIR_POLICY}`]);
  const mismatch = featureMismatch(featureNames, expectedFeatures);
  if (mismatch) throw new ValidationError(`a ${PARAMS_KIND} artifact`, [`was trained on other features than this build computes: ${mismatch}`]);
  const params = { featureNames: featureNames!, hiddenSize: hiddenSize!, tensors: pickTensors(tensors, `a ${PARAMS_KIND} artifact`, '') };
  checkParams(params, `a ${PARAMS_KIND} artifact`);
  return params;
}

export const paramsSha256 = (params: OnnxParams): string => sha256Hex(serializeParams(params));

interface AdamMeta {
  readonly step: number;
}

/** The optimizer state's bytes, for a learner that must resume with its moments after a crash. */
export function serializeAdamState(state: OnnxAdamState): Buffer {
  // The moments are shaped like the parameters: F features (skip weights), H hidden units (hidden bias).
  const [featureCount, hiddenSize] = [state.m.skipWeights.length, state.m.hiddenBias.length];
  const meta: AdamMeta = { step: state.step };
  return encodeTensorFile(ADAM_KIND, meta, [...tensorList(state.m, featureCount, hiddenSize, 'm.'), ...tensorList(state.v, featureCount, hiddenSize, 'v.')]);
}

export function parseAdamState(bytes: Uint8Array): OnnxAdamState {
  const what = `a ${ADAM_KIND} artifact`;
  const { header, tensors } = decodeTensorFile<AdamMeta>(bytes, ADAM_KIND);
  const step = header.meta?.step;
  if (!Number.isInteger(step) || step! < 0) throw new ValidationError(what, [`step must be a whole number >= 0, got ${String(step)}`]);
  return { step: step!, m: pickTensors(tensors, what, 'm.'), v: pickTensors(tensors, what, 'v.') };
}

/** Why two feature lists differ, or null when they are the same. */
export function featureMismatch(actual: readonly string[] | undefined, expected: readonly string[]): string | null {
  if (!Array.isArray(actual)) return 'it names no features';
  if (actual.length !== expected.length) return `${actual.length} features, this build has ${expected.length}`;
  const index = actual.findIndex((name, i) => name !== expected[i]);
  return index < 0 ? null : `feature ${index} is "${actual[index]}", this build has "${expected[index]}"`;
}

/** The element-wise mean of parameters trained on the same features with the same hidden size (see PolicyKind.average). */
export function averageParams(list: readonly OnnxParams[]): OnnxParams {
  const [first] = list;
  if (first === undefined) throw new ConfigError('averageParams needs at least one set of parameters');
  for (const [index, params] of list.entries()) {
    const mismatch = featureMismatch(params.featureNames, first.featureNames);
    if (mismatch !== null || params.hiddenSize !== first.hiddenSize) {
      throw new ConfigError(`averageParams: parameters ${index} differ in shape from parameters 0 (${mismatch ?? `${params.hiddenSize} hidden units, not ${first.hiddenSize}`})`);
    }
    checkParams(params, `averageParams: parameters ${index}`);
  }
  const mean = (name: ParamName): Float32Array => {
    // Summed in float64: a float32 running sum of many versions loses the low bits of each.
    const sum = new Float64Array(first.tensors[name].length);
    for (const params of list) params.tensors[name].forEach((value, i) => (sum[i]! += value));
    return Float32Array.from(sum, (value) => value / list.length);
  };
  return { featureNames: first.featureNames, hiddenSize: first.hiddenSize, tensors: Object.fromEntries(PARAM_NAMES.map((name) => [name, mean(name)])) as Record<ParamName, Float32Array> };
}

/** Checks every tensor's size against the feature count and hidden size. */
export function checkParams(params: OnnxParams, what: string): void {
  const { featureNames, hiddenSize } = params;
  const issues: string[] = [];
  if (!Number.isInteger(hiddenSize) || hiddenSize < 1 || hiddenSize > MAX_HIDDEN) issues.push(`hiddenSize must be a whole number in 1..${MAX_HIDDEN}, got ${String(hiddenSize)}`);
  for (const name of PARAM_NAMES) {
    const size = paramShape(name, featureNames.length, hiddenSize).reduce((a, b) => a * b, 1);
    const tensor = params.tensors[name];
    if (!(tensor instanceof Float32Array)) issues.push(`${name} is missing`);
    else if (tensor.length !== size) issues.push(`${name} has ${tensor.length} values, expected ${size} for ${featureNames.length} features and ${hiddenSize} hidden units`);
  }
  if (issues.length) throw new ValidationError(what, issues);
}

function tensorList(tensors: ParamTensors, featureCount: number, hiddenSize: number, prefix = ''): { name: string; shape: number[]; data: Float32Array }[] {
  return PARAM_NAMES.map((name) => ({ name: `${prefix}${name}`, shape: paramShape(name, featureCount, hiddenSize), data: tensors[name] }));
}

function pickTensors(tensors: Map<string, Float32Array>, what: string, prefix: string): ParamTensors {
  const missing = PARAM_NAMES.filter((name) => !tensors.has(`${prefix}${name}`));
  if (missing.length) throw new ValidationError(what, [`lacks tensors ${missing.map((name) => prefix + name).join(', ')}`]);
  return Object.fromEntries(PARAM_NAMES.map((name) => [name, tensors.get(`${prefix}${name}`)!])) as Record<ParamName, Float32Array>;
}
