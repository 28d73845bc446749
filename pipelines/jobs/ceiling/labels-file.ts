import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { RepairObservation } from '../../../envs/index.js';
import { ConfigError, describeIssues, ToolResult } from '../../../schemas/index.js';
import { LABEL_FORMAT, type TaskLabel } from './label.js';

const TestRunSummary = z.object({
  passed: z.boolean(),
  passedCount: z.number().int().min(0),
  failedCount: z.number().int().min(0),
  moduleLines: z.array(z.number().int()),
  calledNames: z.array(z.string()),
  failureKinds: z.array(z.string()),
  lineSpectrum: z.array(z.object({ line: z.number().int().min(1), failing: z.number().int().min(0), passing: z.number().int().min(0) })),
});

const CandidateEdit = z.object({ id: z.number().int().min(0), kind: z.string(), line: z.number().int(), col: z.number().int(), before: z.string(), after: z.string() });

const Observation = z.object({
  description: z.string(),
  modulePath: z.string().min(1),
  moduleSource: z.string(),
  moduleLineCount: z.number().int().min(0),
  functions: z.array(z.object({ name: z.string(), start: z.number().int(), end: z.number().int() })),
  turn: z.number().int().min(0),
  maxTurns: z.number().int().min(1),
  lastTests: TestRunSummary.nullable(),
  baselineTests: TestRunSummary.nullable(),
  edits: z.array(CandidateEdit).nullable(),
  applied: CandidateEdit.nullable(),
  tried: z.array(z.number().int()),
  lastTool: z.string().nullable(),
  lastResult: ToolResult.nullable(),
}) satisfies z.ZodType<RepairObservation>;

/** One line of a labels file: a task's label (label.ts), checked as it is read back. */
const TaskLabelLine = z
  .object({
    format: z.literal(LABEL_FORMAT),
    taskId: z.string().min(1),
    moduleSha256: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in hex'),
    observation: Observation.nullable(),
    candidates: z.array(z.object({ id: z.number().int().min(0), visiblePass: z.boolean(), solves: z.boolean() })),
    noChoice: z.object({ reason: z.string(), submitsAtTurn: z.number().int().min(1).nullable(), solves: z.boolean() }).nullable(),
    labelledAt: z.string().min(1),
  })
  .superRefine((label, context) => {
    const issue = (message: string, path: string): void => void context.addIssue({ code: 'custom', message, path: [path] });
    if ((label.observation === null) === (label.noChoice === null)) issue('exactly one of observation and noChoice is set', 'noChoice');
    if (label.observation !== null && label.observation.edits === null) issue('a choice needs its listed edits', 'observation');
    const ids = label.observation?.edits?.map((edit) => edit.id) ?? [];
    if (label.candidates.map((candidate) => candidate.id).join(',') !== ids.join(',')) issue(`must label the listed edits ${ids.join(',') || '(none)'} in order`, 'candidates');
    label.candidates.forEach((candidate, i) => candidate.solves && !candidate.visiblePass && issue(`edit ${candidate.id} solves without passing the visible tests`, `candidates.${i}`));
  }) satisfies z.ZodType<TaskLabel>;

/**
 * The labels in a JSON Lines file, one task a line, by task id: a task labelled again (its module changed) appears
 * on a later line, which wins. A file that does not exist holds none; a line of another LABEL_FORMAT is passed
 * over. A line that is not a label is a ConfigError naming the file, the line and what is wrong with it.
 */
export function readLabels(path: string): Map<string, TaskLabel> {
  const labels = new Map<string, TaskLabel>();
  if (!existsSync(path)) return labels;
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      if (text.trim() === '') return;
      const where = `${path} line ${index + 1}`;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (error) {
        throw new ConfigError(`${where} is not JSON (${(error as Error).message}); delete the line to label its task again`);
      }
      // A label of an older format says less than labelling says now: its task is labelled again.
      if ((json as { format?: unknown } | null)?.format !== LABEL_FORMAT) return;
      const parsed = TaskLabelLine.safeParse(json);
      if (!parsed.success) throw new ConfigError(`${where} is not a task label: ${describeIssues(parsed.error).slice(0, 5).join('; ')}`);
      labels.set(parsed.data.taskId, parsed.data);
    });
  return labels;
}

/** Appends one task's label as a line (creating the file and its folder), so labels written before a stop are kept. */
export function appendLabel(path: string, label: TaskLabel): void {
  const parsed = TaskLabelLine.safeParse(label);
  // Never write a line the reader would refuse: the file would stop every later run.
  if (!parsed.success) throw new ConfigError(`label of ${label.taskId} is malformed: ${describeIssues(parsed.error).slice(0, 5).join('; ')}`);
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, `${JSON.stringify(label)}\n`);
}
