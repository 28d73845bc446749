import { ConfigError } from '../../schemas/index.js';

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
  const require = (ok: boolean, field: keyof OnnxUpdateOptions, rule: string): void => {
    if (!ok) throw new ConfigError(`OnnxUpdateOptions.${field} must be ${rule}, got ${String(resolved[field])}`);
  };
  const finite = (value: number): boolean => typeof value === 'number' && Number.isFinite(value);
  require(finite(resolved.learningRate) && resolved.learningRate > 0, 'learningRate', 'a number > 0');
  require(finite(resolved.clip) && resolved.clip > 0 && resolved.clip < 1, 'clip', 'a number in (0, 1)');
  require(finite(resolved.beta1) && resolved.beta1 >= 0 && resolved.beta1 < 1, 'beta1', 'a number in [0, 1)');
  require(finite(resolved.beta2) && resolved.beta2 >= 0 && resolved.beta2 < 1, 'beta2', 'a number in [0, 1)');
  require(finite(resolved.epsilon) && resolved.epsilon > 0, 'epsilon', 'a number > 0');
  require(Number.isInteger(resolved.epochs) && resolved.epochs >= 1, 'epochs', 'a whole number >= 1');
  return resolved;
}
