import type { PolicyDecision, ToolCall } from '../schemas/index.js';

export interface Action {
  readonly action: ToolCall;
  /** Set when a learned choice was made (so the learner can credit it); null for scripted moves. */
  readonly decision: PolicyDecision | null;
}

/** A policy maps an observation to a tool call, with the log-probability of any learned choice. */
export interface Policy<Obs> {
  readonly policyId: string;
  readonly version: number;
  /** Async so that a policy may run a model (onnxruntime) or call a server (an LLM). */
  act(observation: Obs, random: () => number, signal?: AbortSignal): Promise<Action>;
}

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
