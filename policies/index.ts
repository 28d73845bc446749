import { ConfigError } from '../schemas/index.js';
import { linearRepairKind } from './linear-repair/index.js';
import { LLM_POLICY, llmPolicyKind, type ResolvedLlmPolicyOptions } from './llm/index.js';
import { onnxRepairKind } from './onnx-repair/index.js';
import { checkPairing, type AnyPolicyKind } from './types.js';

export * from './types.js';
export * from './linear-repair/index.js';
export * from './llm/index.js';
export * from './onnx-repair/index.js';
export { repairMove, type RepairMove } from './repair-script.js';

const kinds = new Map<string, AnyPolicyKind<unknown>>([
  [linearRepairKind.policyId, linearRepairKind],
  [onnxRepairKind.policyId, onnxRepairKind],
]);

/**
 * Adds a policy kind under its own id, for a process that brings a kind of its own (bench:loop's trace replay):
 * the loop, its rollout workers and its learner then find it by id like the built-in ones. An id already taken
 * is a ConfigError (a kind is never replaced behind the back of a run that uses it).
 */
export function registerPolicyKind(kind: AnyPolicyKind<unknown>): void {
  if (kind.policyId === LLM_POLICY || kinds.has(kind.policyId)) throw new ConfigError(`policy ${kind.policyId} is already registered; a policy kind needs an id of its own`);
  kinds.set(kind.policyId, kind);
}

/** What a configurable kind needs: the llm policy's server and sampling settings. */
export interface PolicySettings {
  /** @default none (then the llm kind cannot be made) */
  readonly llm?: ResolvedLlmPolicyOptions;
}

/** The policy kind a checkpoint or a command names. */
export function policyKind(policyId: string, settings: PolicySettings = {}): AnyPolicyKind<unknown> {
  if (policyId === LLM_POLICY) {
    if (!settings.llm) throw new ConfigError('the llm policy needs its server settings (PolicySettings.llm, from resolveLlmPolicyOptions)');
    return llmPolicyKind(settings.llm);
  }
  const kind = kinds.get(policyId);
  if (!kind) throw new Error(`unknown policy "${policyId}"; known: ${policyIds().join(', ')}`);
  return kind;
}

export const policyIds = (): string[] => [...kinds.keys(), LLM_POLICY];

/** The policy kind a command names, refused (a ConfigError) unless it serves every one of `envIds`. */
export function policyKindFor(policyId: string, envIds: readonly string[], settings: PolicySettings = {}): AnyPolicyKind<unknown> {
  const kind = policyKind(policyId, settings);
  for (const envId of envIds) checkPairing(kind, envId);
  return kind;
}
