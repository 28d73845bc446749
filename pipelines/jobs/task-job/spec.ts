import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { MAX_ROW_DEPTH, SOURCE_FORMATS } from '../../../connectors/files/index.js';
import { EDIT_KINDS } from '../../../envs/index.js';
import { ConfigError, describeIssues, errorMessage } from '../../../schemas/index.js';

/** The single-site edit kinds of the environment's edit tool (`trialrun_repair.py list`), from their one list. */
export const MUTATION_KINDS = EDIT_KINDS;
export type MutationKind = string;

/**
 * Text built from a source row: `{column}` inserts a column, `{column|slug}` a lower-case slug of it
 * (`HumanEval/0` -> `humaneval-0`), `{column|lower}` and `{column|trim}` the obvious; `{{` and `}}` are
 * literal braces. A template naming a column the source lacks is an error.
 */
const Template = z.string().min(1);
/** A column whose value is used as is (a list of tags, a number, a split name); absent or null means the default. */
const Column = z.string().min(1);

const RepairMapping = z
  .object({
    /** Rows are finished program-repair tasks: buggy code, its fix and tests. */
    kind: z.literal('repair'),
    id: Template,
    title: Template,
    description: Template,
    module: Template,
    buggySource: Template,
    fixedSource: Template,
    visibleTests: Template,
    hiddenTests: Template,
    tags: Column.optional(),
    priority: Column.optional(),
    split: Column.optional(),
    /** Rows of one family (variants of one problem) are never near-duplicates of each other. @default the id */
    family: Template.optional(),
  })
  .strict();

const TestsMapping = z.discriminatedUnion('style', [
  /** Two pytest files taken from the row as they are. */
  z.object({ style: z.literal('pytest'), visible: Template, hidden: Template }).strict(),
  /**
   * A `check(candidate)` function of asserts (HumanEval): each assert becomes a test; the first
   * `visibleFraction` of them are visible, all of them hidden.
   */
  z
    .object({
      style: z.literal('check-function'),
      code: Template,
      entryPoint: Template,
      /** @default 0.5 */
      visibleFraction: z.number().gt(0).lt(1).default(0.5),
    })
    .strict(),
  /** A list of assert statements (MBPP's `test_list`), as an array column or one per line. */
  z
    .object({
      style: z.literal('assert-list'),
      asserts: Column,
      /** Code run before the asserts, e.g. imports. @default none */
      setup: Template.optional(),
      /** @default 0.5 */
      visibleFraction: z.number().gt(0).lt(1).default(0.5),
    })
    .strict(),
]);

const SolutionMapping = z
  .object({
    /** Rows are correct code with tests; repair tasks are derived from them by mutation (see `derive`). */
    kind: z.literal('solution'),
    id: Template,
    title: Template,
    description: Template,
    module: Template,
    source: Template,
    tests: TestsMapping,
    tags: Column.optional(),
    priority: Column.optional(),
    split: Column.optional(),
    family: Template.optional(),
  })
  .strict();

export const Mapping = z.discriminatedUnion('kind', [RepairMapping, SolutionMapping]);
export type Mapping = z.infer<typeof Mapping>;
export type RepairMapping = z.infer<typeof RepairMapping>;
export type SolutionMapping = z.infer<typeof SolutionMapping>;

/** Built-in mappings for known formats, so a job names the format instead of spelling the mapping out. */
export const IMPORTERS = {
  /** The bundled format (`tasks/repair-bundle.jsonl`): snake_case repair rows. */
  'repair-rows': {
    kind: 'repair',
    id: '{id}',
    title: '{title}',
    description: '{description}',
    module: '{module}',
    buggySource: '{buggy_source}',
    fixedSource: '{fixed_source}',
    visibleTests: '{visible_tests}',
    hiddenTests: '{hidden_tests}',
    family: '{family?}',
    tags: 'tags',
    priority: 'priority',
    split: 'split',
  },
  /** OpenAI's HumanEval: `task_id`, `prompt`, `canonical_solution`, `test` (a check function), `entry_point`. */
  humaneval: {
    kind: 'solution',
    id: '{task_id|slug}',
    title: '{entry_point} ({task_id})',
    description: '{prompt|trim}',
    module: '{entry_point}.py',
    source: '{prompt}{canonical_solution}',
    tests: { style: 'check-function', code: '{test}', entryPoint: '{entry_point}', visibleFraction: 0.5 },
  },
} as const satisfies Record<string, z.input<typeof Mapping>>;
export type ImporterName = keyof typeof IMPORTERS;

const Source = z
  .object({
    /** A file or glob, relative to the job file. */
    path: z.string().min(1),
    /** @default inferred from the file extension */
    format: z.enum(SOURCE_FORMATS).optional(),
  })
  .strict();

/** How a job publishes its tasks: one transaction, cut into produce requests; every job file has this section. */
export const PublishSettings = z
  .object({
    /** The one transaction's timeout; the broker caps it (transaction.max.timeout.ms, 15 min by default). @default 300000 */
    transactionTimeoutMs: z.number().int().min(1000).max(900_000).default(300_000),
    /** Records per produce request inside the transaction, at most. @default 2000 */
    batchSize: z.number().int().min(1).default(2000),
    /** Encoded bytes per produce request, at most; keep it under the broker's message.max.bytes. @default 900000 */
    requestBytes: z.number().int().min(1024).default(900_000),
    /** A task whose encoded record (large trees stored) is larger is rejected before publishing; the broker refuses records over message.max.bytes (1 MiB by default). @default 1000000 */
    maxRecordBytes: z.number().int().min(1024).default(1_000_000),
  })
  .strict()
  .prefault({});

const Bucket = z.object({ name: z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be a lower-case name'), maxDifficulty: z.number().gt(0).max(1) }).strict();

export const JobSpec = z
  .object({
    /** The data set's name in every task's lineage. */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"'),
    sources: z.array(Source).min(1),
    /** A built-in mapping (`repair-rows`, `humaneval`); give this or `mapping`. */
    importer: z.enum(Object.keys(IMPORTERS) as [ImporterName, ...ImporterName[]]).optional(),
    mapping: Mapping.optional(),
    limits: z
      .object({
        /** A longer line or row is rejected with its size. @default 1048576 */
        maxRowBytes: z.number().int().min(1024).default(1 << 20),
        /** A row whose values nest deeper (arrays and objects within each other) is rejected with its depth. @default 32 */
        maxRowDepth: z.number().int().min(1).max(MAX_ROW_DEPTH).default(32),
        /** Use only the first N rows that pass validation (a quick subset). @default all */
        maxRows: z.number().int().min(1).optional(),
      })
      .strict()
      .prefault({}),
    filters: z
      .object({
        /** Vague tasks make noisy rewards. @default 20 */
        minDescriptionChars: z.number().int().min(0).default(20),
        /** @default 400 */
        maxModuleLines: z.number().int().min(1).default(400),
        /** Test functions (`def test_...`) the hidden tests must hold. @default 1 */
        minHiddenTests: z.number().int().min(1).default(1),
        /** Only rows whose id matches. @default every id */
        idPattern: z.string().optional(),
        /** Rows carrying any of these tags are dropped. @default none */
        excludeTags: z.array(z.string()).default([]),
      })
      .strict()
      .prefault({}),
    /** How repair tasks are derived from solution rows; required for (and only for) solution mappings. */
    derive: z
      .object({
        /** @default every kind the edit tool knows */
        kinds: z.array(z.enum(MUTATION_KINDS)).min(1).default([...MUTATION_KINDS]),
        /** Validated mutants wanted per problem. @default 4 */
        perProblem: z.number().int().min(1).default(4),
        /** Candidate edits tried per problem at most. @default 12 */
        maxCandidates: z.number().int().min(1).default(12),
        /** Test runs per original and per mutant; runs that disagree mark it flaky. @default 2 */
        runs: z.number().int().min(1).default(2),
        /** Budget of one test run of the original; mutants get 10x the original's time (at least 2 s) up to this. @default 5000 */
        timeoutMs: z.number().int().min(500).default(5000),
        /** Sandboxes validating at once. @default 2 */
        sandboxes: z.number().int().min(1).default(2),
        /** Problems per sandbox (one container validates a batch). @default 8 */
        problemsPerSandbox: z.number().int().min(1).default(8),
        /** Orders candidate edits; change it to draw other mutants. @default 'trialrun' */
        seed: z.string().default('trialrun'),
      })
      .strict()
      .optional(),
    dedup: z
      .object({
        /** Estimated Jaccard similarity of token shingles at or above which two rows are near-duplicates. @default 0.8 */
        nearDuplicateThreshold: z.number().gt(0).max(1).default(0.8),
        /** Tokens per shingle. @default 5 */
        shingleTokens: z.number().int().min(1).max(16).default(5),
        /** MinHash signature length. @default 128 */
        signatureSize: z.number().int().min(16).max(1024).default(128),
        /** What to do when an eval row is a near-duplicate of a train row. @default 'drop-train' (keep the eval set intact) */
        contamination: z.enum(['drop-train', 'drop-eval', 'fail']).default('drop-train'),
      })
      .strict()
      .prefault({}),
    split: z
      .object({
        /** Share of families in the eval split, for rows without a split of their own. @default 0 */
        evalFraction: z.number().min(0).max(1).default(0),
        /** Assign whole families (all mutants of a problem) to one split, so no problem leaks across. @default 'family' */
        by: z.enum(['family', 'row']).default('family'),
        /** @default 'trialrun' */
        seed: z.string().default('trialrun'),
      })
      .strict()
      .prefault({}),
    difficulty: z
      .object({
        /** Beta prior: how many pseudo-samples the cold-start estimate is worth. @default 4 */
        priorStrength: z.number().gt(0).default(4),
        /** Pass rate assumed when nothing at all has been observed. @default 0.5 */
        defaultPassRate: z.number().gt(0).lt(1).default(0.5),
        /** Samples a tag (the first tag: the mutation kind) needs before its pass rate is the cold start of its tasks. @default 20 */
        minTagSamples: z.number().int().min(1).default(20),
        /** Pass rate counted as a pass per reward at or above this. @default 1 */
        passReward: z.number().default(1),
        buckets: z
          .array(Bucket)
          .min(1)
          .default([
            { name: 'easy', maxDifficulty: 0.35 },
            { name: 'medium', maxDifficulty: 0.7 },
            { name: 'hard', maxDifficulty: 1 },
          ]),
        /** Share of each bucket in what is published; buckets absent from the mix are not published. @default every task */
        mix: z.record(z.string(), z.number().min(0)).optional(),
        /** Tasks to publish at most (the mix is applied to this). @default as many as the mix allows */
        total: z.number().int().min(1).optional(),
        /** Tasks with this many samples whose smoothed pass rate is below `low` or above `high` carry no learning signal and are parked. */
        park: z
          .object({
            /** @default 8 */
            minSamples: z.number().int().min(1).default(8),
            /** @default 0.05 */
            low: z.number().min(0).max(1).default(0.05),
            /** @default 0.95 */
            high: z.number().min(0).max(1).default(0.95),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    priority: z
      .object({
        /** For rows without a priority of their own. Higher runs first. @default 0 */
        default: z.number().int().default(0),
        /** Added per difficulty bucket, e.g. `{ hard: 1 }`. @default none */
        byBucket: z.record(z.string(), z.number().int()).default({}),
      })
      .strict()
      .prefault({}),
    publish: PublishSettings,
  })
  .strict()
  .superRefine((spec, context) => {
    const issue = (path: (string | number)[], message: string): void => context.addIssue({ code: 'custom', path, message });
    if ((spec.importer === undefined) === (spec.mapping === undefined)) issue(['importer'], 'give exactly one of importer and mapping');
    const kind = spec.mapping?.kind ?? (spec.importer ? IMPORTERS[spec.importer].kind : undefined);
    if (kind === 'solution' && !spec.derive) issue(['derive'], 'solution rows need a derive section (how repair tasks are derived from them)');
    if (kind === 'repair' && spec.derive) issue(['derive'], 'repair rows are tasks already; derive applies to solution rows only');
    if (spec.derive && spec.derive.maxCandidates < spec.derive.perProblem) issue(['derive', 'maxCandidates'], 'must be at least derive.perProblem');
    if (spec.filters.idPattern !== undefined) {
      try {
        new RegExp(spec.filters.idPattern);
      } catch (error) {
        issue(['filters', 'idPattern'], `is not a regular expression: ${errorMessage(error)}`);
      }
    }
    const buckets = spec.difficulty.buckets;
    buckets.forEach((bucket, i) => {
      if (i > 0 && bucket.maxDifficulty <= buckets[i - 1]!.maxDifficulty) issue(['difficulty', 'buckets', i, 'maxDifficulty'], 'buckets must be listed by increasing maxDifficulty');
    });
    if (buckets.at(-1)!.maxDifficulty !== 1) issue(['difficulty', 'buckets', buckets.length - 1, 'maxDifficulty'], 'the last bucket must reach 1 so every task has a bucket');
    if (new Set(buckets.map((b) => b.name)).size !== buckets.length) issue(['difficulty', 'buckets'], 'bucket names must be unique');
    const names = new Set(buckets.map((b) => b.name));
    if (spec.difficulty.mix) {
      for (const name of Object.keys(spec.difficulty.mix)) if (!names.has(name)) issue(['difficulty', 'mix', name], `is not a bucket (buckets: ${[...names].join(', ')})`);
      const sum = Object.values(spec.difficulty.mix).reduce((a, b) => a + b, 0);
      if (Math.abs(sum - 1) > 1e-6) issue(['difficulty', 'mix'], `shares must add up to 1, got ${sum}`);
    }
    if (spec.difficulty.total !== undefined && !spec.difficulty.mix) issue(['difficulty', 'total'], 'needs a mix to split the total across buckets');
    if (spec.difficulty.park.low >= spec.difficulty.park.high) issue(['difficulty', 'park', 'low'], 'must be below park.high');
    for (const name of Object.keys(spec.priority.byBucket)) if (!names.has(name)) issue(['priority', 'byBucket', name], `is not a bucket (buckets: ${[...names].join(', ')})`);
  });
export type JobSpec = z.infer<typeof JobSpec>;
export type JobSpecInput = z.input<typeof JobSpec>;

/** A checked job: the spec with defaults filled in, its mapping resolved and its source paths made absolute. */
export interface ResolvedJob {
  readonly spec: JobSpec;
  readonly mapping: Mapping;
  /** Absolute paths or globs, in the order the job lists them. */
  readonly sources: ReadonlyArray<{ readonly path: string; readonly format?: (typeof SOURCE_FORMATS)[number] }>;
  /** Where the job file lives (relative paths resolve against it), or the working directory. */
  readonly baseDir: string;
}

/** Checks a job spec (already parsed from YAML or JSON); every problem is reported with the field it concerns. */
export function resolveJob(raw: unknown, baseDir: string, what = 'job spec'): ResolvedJob {
  const parsed = JobSpec.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${what} is invalid:\n  ${describeIssues(parsed.error).join('\n  ')}`);
  const spec = parsed.data;
  const mapping = spec.mapping ?? Mapping.parse(IMPORTERS[spec.importer!]);
  return {
    spec,
    mapping,
    sources: spec.sources.map((source) => ({ ...source, path: isAbsolute(source.path) ? source.path : resolve(baseDir, source.path) })),
    baseDir,
  };
}

/** Reads a YAML or JSON job file. */
export function loadJobFile(path: string): ResolvedJob {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read job file ${absolute}: ${errorMessage(error)}`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(absolute) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(`job file ${absolute} is not valid ${/\.json$/i.test(absolute) ? 'JSON' : 'YAML'}: ${errorMessage(error)}`, { cause: error });
  }
  return resolveJob(raw, dirname(absolute), `job file ${absolute}`);
}
