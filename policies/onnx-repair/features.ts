import type { CandidateEdit, RepairObservation } from '../../envs/index.js';
import { editFeatures, FEATURE_NAMES } from '../linear-repair/index.js';

/** Exception classes grouped by what they suggest about the bug. */
const FAILURE_GROUPS: readonly { readonly name: string; readonly kinds: readonly string[] }[] = [
  { name: 'failure:assertion', kinds: ['AssertionError'] },
  { name: 'failure:lookup', kinds: ['IndexError', 'KeyError', 'StopIteration'] },
  { name: 'failure:type', kinds: ['TypeError', 'ValueError', 'AttributeError', 'NameError'] },
  { name: 'failure:arithmetic', kinds: ['ZeroDivisionError', 'OverflowError', 'RecursionError'] },
];

/**
 * The linear policy's per-edit features (edit kind, distance to and position on the failing lines, inside
 * a function the failing tests call, ...), then what the MLP can combine with them: how the visible tests
 * failed (assertion or which kind of exception, how many), whether the traceback reached the module at
 * all, and the episode so far (how much was tried, turns left, whether an edit of this kind, on this line,
 * at this very token was already tried and failed).
 * The order is part of a checkpoint: parameters trained on other names are refused on load.
 */
export const ONNX_REPAIR_FEATURE_NAMES: readonly string[] = [
  ...FEATURE_NAMES,
  'in-failing-function',
  ...FAILURE_GROUPS.map((group) => group.name),
  'failure:other',
  'no-traceback-line',
  'failing-fraction',
  'tried-fraction',
  'turns-left',
  'same-kind-tried',
  'same-line-tried',
  'same-site-tried',
];

/** One feature vector per candidate edit, in ONNX_REPAIR_FEATURE_NAMES order. */
export function candidateFeatures(candidates: readonly CandidateEdit[], observation: RepairObservation): number[][] {
  const failure = observation.baselineTests;
  const failingLines = failure?.moduleLines ?? [];
  const failingFunctions = observation.functions.filter((fn) => failingLines.some((line) => line >= fn.start && line <= fn.end));
  const kinds = failure?.failureKinds ?? [];
  const share = (test: (kind: string) => boolean): number => (kinds.length ? kinds.filter(test).length / kinds.length : 0);
  const grouped = new Set(FAILURE_GROUPS.flatMap((group) => group.kinds));
  const failureShares = [...FAILURE_GROUPS.map((group) => share((kind) => group.kinds.includes(kind))), share((kind) => !grouped.has(kind))];
  const ran = (failure?.passedCount ?? 0) + (failure?.failedCount ?? 0);
  const tried = (observation.edits ?? []).filter((edit) => observation.tried.includes(edit.id));
  const context = [
    ...failureShares,
    failingLines.length === 0 ? 1 : 0,
    ran ? (failure?.failedCount ?? 0) / ran : 0,
    observation.edits?.length ? tried.length / observation.edits.length : 0,
    Math.max(0, observation.maxTurns - observation.turn) / Math.max(1, observation.maxTurns),
  ];
  return candidates.map((edit) => {
    const sameKind = tried.filter((other) => other.kind === edit.kind).length;
    return [
      ...editFeatures(edit, observation),
      failingFunctions.some((fn) => edit.line >= fn.start && edit.line <= fn.end) ? 1 : 0,
      ...context,
      // Saturates: the first failed try of a kind says the most.
      1 - 0.5 ** sameKind,
      tried.some((other) => other.line === edit.line) ? 1 : 0,
      tried.some((other) => other.line === edit.line && other.col === edit.col) ? 1 : 0,
    ];
  });
}
