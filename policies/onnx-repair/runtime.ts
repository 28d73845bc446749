import ort from 'onnxruntime-node';
import { ConfigError, errorMessage, wholeNumber } from '../../schemas/index.js';

export interface OnnxRuntimeOptions {
  /**
   * onnxruntime execution providers, in order of preference; nodes a provider cannot run fall back to the
   * CPU. The linux-x64 npm package bundles 'cpu' and 'webgpu' (Dawn over Vulkan); 'cuda' and 'tensorrt'
   * need provider libraries the package downloads at install time (see docs/learner.md).
   * @default ['cpu']
   */
  executionProviders?: readonly string[];
  /**
   * Threads within one operator. These models are small: more threads cost more in handoffs than they
   * save, and the machine's cores are shared with the sandboxes. 0 lets onnxruntime choose.
   * @default 1
   */
  intraOpThreads?: number;
}

export interface ResolvedRuntimeOptions {
  readonly executionProviders: readonly string[];
  readonly intraOpThreads: number;
}

/** The providers this onnxruntime-node build knows, bundled or not. */
export const knownExecutionProviders = (): string[] => ort.listSupportedBackends().map((backend) => backend.name);

export function resolveRuntimeOptions(options: OnnxRuntimeOptions = {}): ResolvedRuntimeOptions {
  const executionProviders = [...(options.executionProviders ?? ['cpu'])];
  const intraOpThreads = options.intraOpThreads ?? 1;
  const known = knownExecutionProviders();
  if (executionProviders.length === 0) throw new ConfigError('OnnxRuntimeOptions.executionProviders must name at least one provider');
  const unknown = executionProviders.filter((name) => !known.includes(name));
  if (unknown.length) throw new ConfigError(`OnnxRuntimeOptions.executionProviders: ${unknown.join(', ')} unknown to this onnxruntime-node build (it knows ${known.join(', ')})`);
  wholeNumber('OnnxRuntimeOptions.intraOpThreads', intraOpThreads, { min: 0 });
  return { executionProviders, intraOpThreads };
}

/** Opens a session on one of the project's models; a provider that cannot start is a ConfigError naming it. */
export async function openSession(model: Uint8Array, options: ResolvedRuntimeOptions, what: string): Promise<ort.InferenceSession> {
  try {
    return await ort.InferenceSession.create(model, {
      executionProviders: options.executionProviders,
      intraOpNumThreads: options.intraOpThreads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    });
  } catch (error) {
    throw new ConfigError(`cannot open the ${what} model with execution providers [${options.executionProviders.join(', ')}]: ${errorMessage(error)}`, { cause: error });
  }
}

export const tensor = (data: Float32Array, dims: readonly number[]): ort.Tensor => new ort.Tensor('float32', data, dims);
export const scalar = (value: number): ort.Tensor => new ort.Tensor('float32', new Float32Array([value]), []);

/** Candidate feature vectors of several decisions, padded to the longest: what the models take. */
export interface PackedCandidates {
  readonly decisions: number;
  readonly candidates: number;
  /** [decisions, candidates, features] */
  readonly features: Float32Array;
  /** [decisions, candidates]: 1 for a real candidate, 0 for padding. */
  readonly mask: Float32Array;
}

export function packCandidates(decisions: readonly (readonly (readonly number[])[])[], featureCount: number): PackedCandidates {
  const candidates = Math.max(1, ...decisions.map((rows) => rows.length));
  const features = new Float32Array(decisions.length * candidates * featureCount);
  const mask = new Float32Array(decisions.length * candidates);
  decisions.forEach((rows, b) => {
    rows.forEach((row, c) => {
      features.set(row, (b * candidates + c) * featureCount);
      mask[b * candidates + c] = 1;
    });
  });
  return { decisions: decisions.length, candidates, features, mask };
}
