import { ConfigError, type RewardSpec } from '../../schemas/index.js';

export type ResolvedRewardSpec = Readonly<Required<RewardSpec>>;

/** A task's RewardSpec with its defaults: binary, no turn penalty. */
export function resolveRewardSpec(spec: RewardSpec | undefined): ResolvedRewardSpec {
  const resolved = { shape: 'binary' as const, turnPenalty: 0, ...spec };
  if (!(resolved.turnPenalty >= 0 && resolved.turnPenalty <= 1)) throw new ConfigError(`RewardSpec.turnPenalty must be in [0, 1], got ${resolved.turnPenalty}`);
  return resolved;
}

export interface ScoreInput {
  readonly passed: boolean;
  /** Share of listed tests or output checks that passed, or a script's own reward, in [0, 1]. */
  readonly fraction: number;
  readonly hacked: boolean;
  /** Tool calls of the episode (0 for a reference or a variant, which have none). */
  readonly toolCalls: number;
}

/**
 * The reward of one verification under a RewardSpec: `binary` 1 when passed, `fraction` the partial credit;
 * minus `turnPenalty` per tool call, floored at 0. Any hack flag scores 0, whatever else held.
 */
export function scoreOf(spec: ResolvedRewardSpec, input: ScoreInput): number {
  if (input.hacked) return 0;
  const base = spec.shape === 'binary' ? (input.passed ? 1 : 0) : Math.min(1, Math.max(0, input.fraction));
  return Math.max(0, base - spec.turnPenalty * input.toolCalls);
}
