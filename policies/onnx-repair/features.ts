import type { CandidateEdit, RepairObservation, TestRunSummary } from '../../envs/index.js';
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
 * at this very token was already tried and failed). Four describe the edit's text against the module: a fix
 * tends to take text away (a `not`, a `+ 1`) and to write what the module already uses elsewhere, where the
 * mutation it undoes left text found nowhere else (`ceiling` labels: docs/learner.md). The last three say
 * how suspicious the edit's line is by which lines the failing and the passing tests of the first run ran.
 * The order is part of a checkpoint: parameters trained on other names are refused on load.
 */
export const ONNX_REPAIR_FEATURE_NAMES: readonly string[] = [
  ...FEATURE_NAMES,
  'in-failing-function',
  'shortens',
  'lengthens',
  'after-familiar',
  'before-only-here',
  ...FAILURE_GROUPS.map((group) => group.name),
  'failure:other',
  'no-traceback-line',
  'failing-fraction',
  'tried-fraction',
  'turns-left',
  'same-kind-tried',
  'same-line-tried',
  'same-site-tried',
  'line-suspiciousness',
  'most-suspicious-line',
  'not-run-by-failing',
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
  const occurrences = tokenCounter(observation.moduleSource);
  const suspiciousness = lineSuspiciousness(failure);
  const mostSuspicious = Math.max(0, ...candidates.map((edit) => suspiciousness(edit.line)));
  const hasSpectrum = (failure?.lineSpectrum.length ?? 0) > 0;
  return candidates.map((edit) => {
    const sameKind = tried.filter((other) => other.kind === edit.kind).length;
    // The edit's own site holds one occurrence of its old text: the others are elsewhere in the module.
    const beforeElsewhere = Math.max(0, occurrences(edit.before) - 1);
    const afterElsewhere = occurrences(edit.after);
    return [
      ...editFeatures(edit, observation),
      failingFunctions.some((fn) => edit.line >= fn.start && edit.line <= fn.end) ? 1 : 0,
      edit.after.length < edit.before.length ? 1 : 0,
      edit.after.length > edit.before.length ? 1 : 0,
      beforeElsewhere + afterElsewhere === 0 ? 0.5 : afterElsewhere / (beforeElsewhere + afterElsewhere),
      beforeElsewhere === 0 ? 1 : 0,
      ...context,
      // Saturates: the first failed try of a kind says the most.
      1 - 0.5 ** sameKind,
      tried.some((other) => other.line === edit.line) ? 1 : 0,
      tried.some((other) => other.line === edit.line && other.col === edit.col) ? 1 : 0,
      suspiciousness(edit.line),
      mostSuspicious > 0 && suspiciousness(edit.line) === mostSuspicious ? 1 : 0,
      hasSpectrum && suspiciousness(edit.line) === 0 ? 1 : 0,
    ];
  });
}

/**
 * Ochiai's suspiciousness of each module line from the first run's line spectrum: failing(line) /
 * sqrt(all failing x (failing(line) + passing(line))). 1 for a line every failing test runs and no passing test
 * does, 0 for one no failing test runs (or with no spectrum). On the HumanEval-derived tasks the traceback names
 * a module line for few failures (an assertion fails in the test), while the fix's line is among the most
 * suspicious candidate lines for nearly all (docs/learner.md).
 */
export function lineSuspiciousness(run: TestRunSummary | null): (line: number) => number {
  const spectrum = run?.lineSpectrum ?? [];
  const byLine = new Map(spectrum.map((counts) => [counts.line, counts]));
  // pytest's count, which includes failures that ran no module line; never below what the spectrum shows.
  const failingTests = Math.max(run?.failedCount ?? 0, ...spectrum.map((counts) => counts.failing));
  return (line) => {
    const counts = byLine.get(line);
    if (!counts || counts.failing === 0) return 0;
    return counts.failing / Math.sqrt(failingTests * (counts.failing + counts.passing));
  };
}

const WORD = /^\w/;

/**
 * Counts whole-token occurrences of a text in `source`: `<` is not counted inside `<=` or `<<`, nor `1`
 * inside `10` or `x1`. Blank text occurs nowhere. Each text is counted once per counter: a choice's
 * candidates share a few operators and literals.
 */
export function tokenCounter(source: string): (text: string) => number {
  const counts = new Map<string, number>();
  return (text) => {
    const needle = text.trim();
    if (needle === '') return 0;
    let count = counts.get(needle);
    if (count === undefined) {
      const escaped = needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      // A word-like end may not continue a word; an operator end may not continue an operator.
      const edge = (char: string): string => (WORD.test(char) ? '\\w' : '[-+*/%<>=!&|^~@]');
      const pattern = new RegExp(`(?<!${edge(needle[0]!)})${escaped}(?!${edge(needle.at(-1)!)})`, 'g');
      count = source.match(pattern)?.length ?? 0;
      counts.set(needle, count);
    }
    return count;
  };
}
