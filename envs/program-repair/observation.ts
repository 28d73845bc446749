import type { ToolResult } from '../../schemas/index.js';
import type { TestRunSummary } from './pytest-output.js';

/** One candidate single-site edit, as listed by the in-sandbox repair tool. */
export interface CandidateEdit {
  readonly id: number;
  readonly kind: string;
  readonly line: number;
  readonly col: number;
  readonly before: string;
  readonly after: string;
}

/** A function definition's line span in the module, for locating edits relative to failures. */
export interface FunctionSpan {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

export interface RepairObservation {
  readonly description: string;
  readonly modulePath: string;
  /** The module as the task gave it: what `list_edits` lists edits of, until the agent writes the file itself. */
  readonly moduleSource: string;
  readonly moduleLineCount: number;
  readonly functions: readonly FunctionSpan[];
  readonly turn: number;
  readonly maxTurns: number;
  /** The last visible-test run; null before the first and after every edit or revert. */
  readonly lastTests: TestRunSummary | null;
  /** The first run on the unedited module: where the bug shows itself. */
  readonly baselineTests: TestRunSummary | null;
  /** The candidate edits of the pristine module; null until listed. */
  readonly edits: readonly CandidateEdit[] | null;
  /** The edit currently applied, if any. */
  readonly applied: CandidateEdit | null;
  /** Ids of edits already applied and reverted in this episode. */
  readonly tried: readonly number[];
  /** Name of the previous tool call; null at the start. */
  readonly lastTool: string | null;
  /** What the previous tool call returned (the text an LLM agent reads); null at the start. */
  readonly lastResult: ToolResult | null;
}

/** Line spans of the top-level and nested `def`s, by indentation. */
export function functionSpans(source: string): FunctionSpan[] {
  const lines = source.split('\n');
  const spans: FunctionSpan[] = [];
  lines.forEach((text, index) => {
    const match = /^(\s*)(?:async\s+)?def\s+(\w+)/.exec(text);
    if (!match) return;
    const indent = match[1]!.length;
    let end = index + 1;
    for (let j = index + 1; j < lines.length; j++) {
      const line = lines[j]!;
      if (line.trim() === '') continue;
      if (line.length - line.trimStart().length <= indent) break;
      end = j + 1;
    }
    spans.push({ name: match[2]!, start: index + 1, end });
  });
  return spans;
}
