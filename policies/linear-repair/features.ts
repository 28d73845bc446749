import { EDIT_KINDS, type CandidateEdit, type RepairObservation } from '../../envs/index.js';

// Sorted, so the feature order (and every checkpoint's weights) does not depend on the list's order.
const KINDS = [...EDIT_KINDS].sort();

/** Feature order is part of a checkpoint: a checkpoint whose names differ is rejected on load. */
export const FEATURE_NAMES: readonly string[] = [
  ...KINDS.map((kind) => `kind:${kind}`),
  'near-failing-line',
  'on-failing-line',
  'in-called-function',
  'relative-line',
  'inclusive-compare',
  'increments',
];

/** Describes one candidate edit in the context of where the visible tests failed. */
export function editFeatures(edit: CandidateEdit, observation: RepairObservation): number[] {
  const failure = observation.baselineTests;
  const failingLines = failure?.moduleLines ?? [];
  const called = new Set(failure?.calledNames ?? []);
  const nearest = failingLines.reduce((best, line) => Math.min(best, Math.abs(line - edit.line)), Number.POSITIVE_INFINITY);
  const inCalled = observation.functions.some((fn) => called.has(fn.name) && edit.line >= fn.start && edit.line <= fn.end);
  const before = Number(edit.before);
  const after = Number(edit.after);
  return [
    ...KINDS.map((kind) => (edit.kind === kind ? 1 : 0)),
    Number.isFinite(nearest) ? Math.exp(-nearest / 2) : 0,
    failingLines.includes(edit.line) ? 1 : 0,
    inCalled ? 1 : 0,
    edit.line / Math.max(1, observation.moduleLineCount),
    edit.after === '<=' || edit.after === '>=' ? 1 : 0,
    Number.isFinite(before) && Number.isFinite(after) && after > before ? 1 : 0,
  ];
}
