import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { seededRandom } from '../../../../policies/index.js';
import { checkoutFile, type FileTree, type OutputCheck, type VerificationSpec } from '../../../../schemas/index.js';
import type { LocatedTask } from '../workspace-trees.js';
import { DOCUMENT_TEMPLATES, documentTask } from './json-documents.js';
import { EXPRESSION_TEMPLATES, expressionTask } from './python-expressions.js';

export { DOCUMENT_TEMPLATES, documentTask, type DocumentTask, type DocumentTemplate } from './json-documents.js';
export { EXPRESSION_CASES, EXPRESSION_TEMPLATES, expressionTask, type ExpressionTask, type ExpressionTemplate } from './python-expressions.js';

/** The task families a job can generate, each a list of templates (single-turn/v1 tasks sized for a small model). */
export const GENERATED_FAMILIES = ['python-expressions', 'json-documents'] as const;
export type GeneratedFamily = (typeof GENERATED_FAMILIES)[number];

const TEMPLATE_NAMES: Record<GeneratedFamily, readonly string[]> = {
  'python-expressions': EXPRESSION_TEMPLATES.map((t) => t.name),
  'json-documents': DOCUMENT_TEMPLATES.map((t) => t.name),
};

/** A job-file source that makes tasks from a family's templates, seeded, instead of reading them. */
export const GenerateSource = z
  .object({
    family: z.enum(GENERATED_FAMILIES),
    /** Tasks made, spread evenly over the templates. */
    count: z.number().int().min(1).max(1_000_000),
    /** Every drawn value (parameters, hidden inputs, which templates are held out) follows from it. @default 'trialrun' */
    seed: z.string().min(1).default('trialrun'),
    /**
     * Share of the family's templates whose tasks are all held out (split eval), drawn by the seed: whole templates,
     * not values, so a held-out score measures generalisation to asks never trained on. @default 0.25
     */
    heldOutTemplates: z.number().min(0).max(1).default(0.25),
    /** The held-out templates by name instead of drawn. @default drawn by `heldOutTemplates` */
    evalTemplates: z.array(z.string().min(1)).optional(),
  })
  .strict()
  .superRefine((source, context) => {
    const known = TEMPLATE_NAMES[source.family];
    for (const [i, name] of (source.evalTemplates ?? []).entries()) {
      if (!known.includes(name)) context.addIssue({ code: 'custom', path: ['evalTemplates', i], message: `is not a template of ${source.family} (templates: ${known.join(', ')})` });
    }
  });
export type GenerateSource = z.infer<typeof GenerateSource>;

/** The held-out templates of a source: named, or a seeded draw of `heldOutTemplates` of them (at least one when the share is above 0). */
export function heldOutTemplates(source: GenerateSource): Set<string> {
  const names = TEMPLATE_NAMES[source.family];
  if (source.evalTemplates) return new Set(source.evalTemplates);
  const count = source.heldOutTemplates === 0 ? 0 : Math.max(1, Math.round(source.heldOutTemplates * names.length));
  const random = seededRandom(`${source.seed}/${source.family}/held-out`);
  const order = names.map((name) => ({ name, key: random() })).sort((a, b) => a.key - b.key);
  return new Set(order.slice(0, count).map((entry) => entry.name));
}

/** Where a generated task's reply is written (its one file, empty), and the graders that read it in the grading sandbox. */
const REPLY_PATH = 'answer.txt';
const GRADER_FILES = ['grade_expression.py', 'extract_document.py', 'reply_code.py'] as const;
const graderFile = (name: string): string => readFileSync(checkoutFile(`pipelines/jobs/task-job/generate/python/${name}`), 'utf8');

interface GeneratedTask {
  readonly template: string;
  readonly prompt: string;
  readonly hidden: FileTree;
  readonly reference: string;
  readonly verification: VerificationSpec;
}

/** Partial credit: the share of the checks passed. */
const fraction = (check: VerificationSpec['check']): VerificationSpec => ({ check, reward: { shape: 'fraction' } });

function generatedTask(family: GeneratedFamily, index: number, seed: string, graders: (names: readonly (typeof GRADER_FILES)[number][]) => FileTree): GeneratedTask {
  const random = seededRandom(`${seed}/${family}/${index}`);
  if (family === 'python-expressions') {
    const task = expressionTask(EXPRESSION_TEMPLATES[index % EXPRESSION_TEMPLATES.length]!, random);
    // The reply is valid Python (one check) and gives the expected value on each hidden input (one check each).
    const checks: OutputCheck[] = [
      { type: 'content', path: 'results/valid.txt', expected: 'valid', normalise: 'trim' },
      ...task.expected.map((value, i): OutputCheck => ({ type: 'json', path: `results/case-${i + 1}.json`, expected: JSON.stringify(value) })),
    ];
    return {
      template: task.template,
      prompt: task.prompt,
      hidden: { ...graders(['grade_expression.py', 'reply_code.py']), 'cases.json': JSON.stringify({ variable: task.variable, values: task.cases }) },
      reference: task.reference,
      verification: fraction({ kind: 'output', command: ['python3', 'grade_expression.py'], checks }),
    };
  }
  const task = documentTask(DOCUMENT_TEMPLATES[index % DOCUMENT_TEMPLATES.length]!, random);
  const keys = Object.keys(task.values);
  // One check per asked-for field, and one that the object has exactly those keys (extra keys are the usual miss).
  const checks: OutputCheck[] = [
    ...Object.entries(task.values).map(([key, value]): OutputCheck => ({ type: 'json-schema', path: 'document.json', schema: { type: 'object', required: [key], properties: { [key]: { const: value } } } })),
    { type: 'json-schema', path: 'document.json', schema: { type: 'object', required: keys, additionalProperties: false, properties: Object.fromEntries(keys.map((key) => [key, {}])) } },
  ];
  return {
    template: task.template,
    prompt: task.prompt,
    hidden: graders(['extract_document.py', 'reply_code.py']),
    reference: task.reference,
    verification: fraction({ kind: 'output', command: ['python3', 'extract_document.py'], checks }),
  };
}

/** The tasks a generate source makes, as the job reads any other task: id, prompt, trees, verification, split by template. */
export function generatedTasks(source: GenerateSource, sourceLabel: string): LocatedTask[] {
  const held = heldOutTemplates(source);
  // Each grader file is read once per job, not once per task.
  const files = new Map(GRADER_FILES.map((name) => [name, graderFile(name)]));
  const graders = (names: readonly (typeof GRADER_FILES)[number][]): FileTree => Object.fromEntries(names.map((name) => [name, files.get(name)!]));
  const digits = String(source.count - 1).length;
  const tasks: LocatedTask[] = [];
  for (let index = 0; index < source.count; index++) {
    const task = generatedTask(source.family, index, source.seed, graders);
    const id = `${source.family}-${task.template}-${String(index).padStart(digits, '0')}`;
    const trees = { files: { [REPLY_PATH]: '' }, hidden: task.hidden, solution: { [REPLY_PATH]: task.reference } };
    tasks.push({
      entry: { id, title: `${task.template} #${index}`, description: task.prompt, verification: task.verification, tags: [source.family, task.template], priority: 0, split: held.has(task.template) ? 'eval' : 'train' },
      source: sourceLabel,
      row: index + 1,
      rejectAs: 'invalid generated task',
      readTrees: async () => trees,
    });
  }
  return tasks;
}
