import type { RepairObservation } from '../envs/index.js';
import { linearRepairKind } from './linear-repair/index.js';
import { onnxRepairKind } from './onnx-repair/index.js';
import type { AnyPolicyKind } from './types.js';

export * from './types.js';
export * from './linear-repair/index.js';
export * from './llm-repair/index.js';
export * from './onnx-repair/index.js';

const kinds = new Map<string, AnyPolicyKind<RepairObservation>>([
  [linearRepairKind.policyId, linearRepairKind],
  [onnxRepairKind.policyId, onnxRepairKind],
]);

/** The policy kind a checkpoint or a command names. */
export function policyKind(policyId: string): AnyPolicyKind<RepairObservation> {
  const kind = kinds.get(policyId);
  if (!kind) throw new Error(`unknown policy "${policyId}"; known: ${[...kinds.keys()].join(', ')}`);
  return kind;
}

export const policyIds = (): string[] => [...kinds.keys()];
