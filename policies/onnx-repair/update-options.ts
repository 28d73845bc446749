import { finiteNumber, wholeNumber } from '../../schemas/index.js';

export interface OnnxUpdateOptions {
  /** Adam step size. @default 0.03 */
  learningRate?: number;
  /** PPO clip range on the probability ratio: decisions whose ratio left [1-clip, 1+clip] in the direction their advantage pushes pass no gradient. @default 0.2 */
  clip?: number;
  /** Adam's first-moment decay. @default 0.9 */
  beta1?: number;
  /** Adam's second-moment decay. @default 0.999 */
  beta2?: number;
  /** Adam's denominator floor. @default 1e-8 */
  epsilon?: number;
  /** Adam steps over the same batch (PPO epochs); after the first, the clip bounds how far the policy moves. @default 1 */
  epochs?: number;
}

export type ResolvedUpdateOptions = Readonly<Required<OnnxUpdateOptions>>;

export function resolveUpdateOptions(options: OnnxUpdateOptions = {}): ResolvedUpdateOptions {
  const resolved = {
    learningRate: options.learningRate ?? 0.03,
    clip: options.clip ?? 0.2,
    beta1: options.beta1 ?? 0.9,
    beta2: options.beta2 ?? 0.999,
    epsilon: options.epsilon ?? 1e-8,
    epochs: options.epochs ?? 1,
  };
  finiteNumber('OnnxUpdateOptions.learningRate', resolved.learningRate, { above: 0 });
  finiteNumber('OnnxUpdateOptions.clip', resolved.clip, { above: 0, below: 1 });
  finiteNumber('OnnxUpdateOptions.beta1', resolved.beta1, { min: 0, below: 1 });
  finiteNumber('OnnxUpdateOptions.beta2', resolved.beta2, { min: 0, below: 1 });
  finiteNumber('OnnxUpdateOptions.epsilon', resolved.epsilon, { above: 0 });
  wholeNumber('OnnxUpdateOptions.epochs', resolved.epochs, { min: 1 });
  return resolved;
}
