import type { CandidateEdit, RepairObservation } from '../envs/index.js';
import type { PolicyDecision } from '../schemas/index.js';
import type { Action } from './types.js';

/** Either the script's own next move, or the untried edits among which the policy must choose one to apply. */
export type RepairMove = { readonly kind: 'scripted'; readonly action: Action } | { readonly kind: 'choose-edit'; readonly candidates: readonly CandidateEdit[] };

/**
 * The scripted agent loop the repair policies share: run the visible tests, list the edits, then apply an
 * edit, rerun the tests, and either submit (tests pass) or revert and choose again. Only the choice of
 * edit is learned.
 */
export function repairMove(observation: RepairObservation): RepairMove {
  const call = (name: string, args: Record<string, unknown> = {}): RepairMove => ({ kind: 'scripted', action: { action: { name, arguments: args }, decision: null } });
  if (observation.lastTests?.passed) return call('submit');
  if (observation.baselineTests === null) return call('run_tests');
  if (observation.edits === null) return call('list_edits');
  if (observation.applied) return observation.lastTests === null ? call('run_tests') : call('revert');
  // An attempt needs three turns (apply, run tests, submit); the env submits by itself at the cap.
  const candidates = observation.edits.filter((edit) => !observation.tried.includes(edit.id));
  if (candidates.length === 0 || observation.turn + 2 > observation.maxTurns) return call('submit');
  return { kind: 'choose-edit', candidates };
}

export const applyEdit = (edit: CandidateEdit, decision: PolicyDecision): Action => ({ action: { name: 'apply_edit', arguments: { id: edit.id } }, decision });
