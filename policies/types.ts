import type { AnyEnvSpec } from '../envs/index.js';
import { ConfigError, type LlmCall, type PolicyDecision, type ToolCall } from '../schemas/index.js';

export interface Action {
  readonly action: ToolCall;
  /** Set when a learned choice was made (so the learner can credit it); null for scripted moves. */
  readonly decision: PolicyDecision | null;
  /** Set when a language model chose the action. */
  readonly llm?: LlmCall;
  /**
   * Set when the policy's reply was no valid action (a language model's unparseable call): the turn is
   * recorded as failed with this reason, the environment is not stepped, and the policy tells its model.
   */
  readonly invalid?: string;
}

/** A policy maps an observation to a tool call, with the log-probability of any learned choice. */
export interface Policy<Obs> {
  readonly policyId: string;
  readonly version: number;
  /** Async so that a policy may run a model (onnxruntime) or call a server (an LLM). */
  act(observation: Obs, random: () => number, signal?: AbortSignal): Promise<Action>;
  /** A policy that keeps per-episode state (a chat transcript) hands out one actor per episode, for that episode's environment. */
  startEpisode?(env: AnyEnvSpec): Policy<Obs>;
}

/** One trajectory's learned choices with the group-relative advantage of its outcome. */
export interface PolicySample {
  readonly decisions: readonly PolicyDecision[];
  /** The outcome's advantage: what the last decision earns, and every decision unless `earlierAdvantage` is set. */
  readonly advantage: number;
  /**
   * What each decision before the last earns, for a kind whose earlier choices were each abandoned as failed
   * (PolicyKind.earlierDecisionsFailed): the advantage a failed outcome had in the same group. @default advantage
   */
  readonly earlierAdvantage?: number;
  /** Weight from the staleness policy (1 for fresh samples). */
  readonly weight: number;
}

/** The (staleness-weighted) advantage credited to decision `index` of a sample. */
export function decisionAdvantage(sample: PolicySample, index: number): number {
  const last = index === sample.decisions.length - 1;
  return (last ? sample.advantage : (sample.earlierAdvantage ?? sample.advantage)) * sample.weight;
}

export interface TrainingStep<Params, Optimizer> {
  readonly params: Params;
  readonly optimizer: Optimizer;
  readonly gradNorm: number;
}

/** How a policy turns its distribution over choices into one: draw from it, or take its most probable choice. */
export const DECODINGS = ['greedy', 'sample'] as const;
export type Decoding = (typeof DECODINGS)[number];

/** How a loaded policy acts. */
export interface LoadOptions {
  /**
   * 'greedy' takes the most probable choice (a language model at temperature 0): deterministic evaluation, as
   * RL libraries evaluate a trained policy. Rollouts for training always sample. @default 'sample'
   */
  readonly decoding?: Decoding;
}

export interface UpdateOptions {
  /** Adam step size. @default 0.1 */
  learningRate?: number;
  /** PPO clip range on the probability ratio. @default 0.2 */
  clip?: number;
  /** Ascent steps on each batch (PPO epochs); after the first, the clip bounds how far the policy moves. @default 1 */
  epochs?: number;
}

/**
 * Everything the learner and the rollout workers need to know about one kind of policy: how to start,
 * how to serialise parameters into a checkpoint artifact (whose sha256 the workers verify), how to load
 * a policy from them, and how to take one training step.
 */
export interface PolicyKind<Obs, Params, Optimizer> {
  readonly policyId: string;
  /** The environments it acts in: their ids, or 'any' for a policy that takes its tools from the environment's spec. */
  readonly serves: ServedEnvs;
  readonly featureNames: readonly string[];
  /**
   * Who trains it: true, the in-process learner (pipelines/learner); 'external', a learner process of its own (the
   * llm policy, whose weights live in a model server: the Python LLM learner, LoopOptions.externalLearner); false, nothing.
   * @default true
   */
  readonly trainable?: boolean | 'external';
  /**
   * True when the kind makes a new learned choice only after the previous one failed and was undone (the repair
   * script reverts an edit that fails the visible tests, then chooses again): only a trajectory's last choice can
   * have earned its outcome, so the learner credits the earlier ones as failures, not with a success they did not
   * cause. @default false
   */
  readonly earlierDecisionsFailed?: boolean;
  initial(): { params: Params; optimizer: Optimizer };
  encodeParams(params: Params): Buffer;
  decodeParams(bytes: Buffer): Params;
  encodeOptimizer(optimizer: Optimizer): Buffer;
  decodeOptimizer(bytes: Buffer): Optimizer;
  /** Inline weights for the checkpoint record (small models only; [] otherwise). */
  inlineWeights(params: Params): number[];
  /**
   * The element-wise mean of parameters of one shape: tail averaging of the versions along one training run
   * (Polyak-Ruppert, SWA), which smooths the swings of a noisy ascent's last iterate. A kind whose weights live
   * elsewhere (the llm policy's adapter, in its learner and model server) has none. Throws a ConfigError for an
   * empty list or parameters of different shapes.
   */
  average?(params: readonly Params[]): Params;
  load(params: Params, version: number, options?: LoadOptions): Promise<Policy<Obs>>;
  update(params: Params, optimizer: Optimizer, samples: readonly PolicySample[], options: UpdateOptions): Promise<TrainingStep<Params, Optimizer>>;
}

/** The environments a policy kind serves: a list of ids, or every environment ('any'). */
export type ServedEnvs = readonly string[] | 'any';

export const servesEnv = (kind: { readonly serves: ServedEnvs }, envId: string): boolean => kind.serves === 'any' || kind.serves.includes(envId);

/** Refuses a policy for an environment it does not serve, with a ConfigError naming both (checked before anything starts). */
export function checkPairing(kind: { readonly policyId: string; readonly serves: ServedEnvs }, envId: string): void {
  if (servesEnv(kind, envId)) return;
  throw new ConfigError(`policy ${kind.policyId} does not serve environment ${envId}: it serves ${kind.serves === 'any' ? 'any' : kind.serves.join(', ')}; choose a policy that serves ${envId} (the llm policy serves every environment)`);
}

// Kinds are looked up by the policy id a checkpoint names; the parameter types are the kind's own business.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPolicyKind<Obs> = PolicyKind<Obs, any, any>;

/** Small, fast, seedable PRNG (mulberry32) so that a sample can be replayed from its seed. */
export function seededRandom(seed: string): () => number {
  let state = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) state = Math.imul(state ^ seed.charCodeAt(i), 0x01000193) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
