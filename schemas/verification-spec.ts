import { z } from 'zod';

/**
 * How a task is verified, chosen per task. Every kind runs in a fresh grading sandbox that the agent never
 * touched: the agent's final files are written there first, then the task's hidden files, then the check runs.
 * A task without a spec is verified as program repair always was (`PYTEST_REPAIR_VERIFICATION`).
 */

/** Argv of a command run in the grading sandbox's workspace; never a shell string (use `['bash', '-c', ...]`). */
const Command = z.array(z.string().min(1)).min(1);

/** Wall-clock budget of the check's command, in ms. */
const CheckTimeoutMs = z.number().int().min(1000).max(600_000);

/**
 * A test command whose runner writes JUnit XML, with SWE-bench semantics: every id in `failToPass` and
 * `passToPass` must be found in the report and pass. Ids are `path/to/test_file.py::Class::test_name` for pytest
 * (subfolders included) and `classname::name` for other runners. `runner: 'pytest'` runs the hardened pytest
 * runner (witness, canaries, strict assertions) and ignores `command`/`junitPath`; `runner: 'command'` runs any
 * command that writes JUnit XML (jest/vitest with a JUnit reporter, go test via go-junit-report, ...).
 */
export const TestsVerification = z.object({
  kind: z.literal('tests'),
  runner: z.enum(['pytest', 'command']),
  /** @default ['python3', '-m', 'pytest'] for runner 'pytest'; required for 'command'. */
  command: Command.optional(),
  /** Where the command writes its JUnit XML, relative to the workspace; required for runner 'command'. */
  junitPath: z.string().min(1).optional(),
  /** Ids that fail on the task's starting files and must pass after the agent's change. */
  failToPass: z.array(z.string().min(1)),
  /** Ids that pass on the starting files and must still pass. */
  passToPass: z.array(z.string().min(1)),
  timeoutMs: CheckTimeoutMs.optional(),
});
export type TestsVerification = z.infer<typeof TestsVerification>;

/**
 * A verifier script, the Harbor contract: it runs after the agent's files and the hidden files are in place and
 * writes a reward file into `TRIALRUN_REWARD_DIR`: `reward.txt` with one number in [0, 1], or `reward.json`
 * (`{"reward": <number>, ...}`, other keys kept as details). No reward file, or an unreadable one, is a failure.
 */
export const ScriptVerification = z.object({
  kind: z.literal('script'),
  command: Command,
  /** The reward at or above which the task counts as passed. @default 1 */
  passThreshold: z.number().min(0).max(1).optional(),
  timeoutMs: CheckTimeoutMs.optional(),
});
export type ScriptVerification = z.infer<typeof ScriptVerification>;

/** Where an output check reads: `path`, a file of the grading workspace, or `stdout` of `OutputVerification.command`. */
const target = { path: z.string().min(1).optional(), stdout: z.literal(true).optional() };

/** The expected value inline (`expected`), or in a hidden file of the task (`expectedFile`), which never enters the agent's sandbox. */
const expected = { expected: z.string().optional(), expectedFile: z.string().min(1).optional() };

const exactlyOne = (value: Record<string, unknown>, keys: readonly string[]): boolean => keys.filter((key) => value[key] !== undefined).length === 1;

/** Checks on produced files or stdout, decided by trialrun itself from what it reads back (agent code cannot vote). */
export const OutputCheck = z
  .discriminatedUnion('type', [
    /** Text equality after normalisation: `exact`, `trim` (ends), `whitespace` (runs of whitespace), `lines-unordered`. */
    z.object({ type: z.literal('content'), ...target, ...expected, normalise: z.enum(['exact', 'trim', 'whitespace', 'lines-unordered']).optional() }),
    /**
     * CSV equality: same header (its columns in any order when `anyColumnOrder`), same rows (in any order unless
     * `ordered`), numbers equal within the relative `tolerance`. Defaults: ordered false, anyColumnOrder false, tolerance 0.
     */
    z.object({ type: z.literal('csv'), ...target, ...expected, ordered: z.boolean().optional(), anyColumnOrder: z.boolean().optional(), tolerance: z.number().min(0).optional() }),
    /**
     * JSON equality: the file parses as JSON and equals the expected value, object keys in any order, numbers
     * equal within the relative `tolerance`, arrays in order unless `unorderedArrays`. Defaults: tolerance 0, unorderedArrays false.
     */
    z.object({ type: z.literal('json'), ...target, ...expected, tolerance: z.number().min(0).optional(), unorderedArrays: z.boolean().optional() }),
    /** The file parses as JSON and validates against a JSON Schema (draft 2020-12). */
    z.object({ type: z.literal('json-schema'), ...target, schema: z.record(z.string(), z.unknown()) }),
    /** The file parses as YAML and its value validates against a JSON Schema. */
    z.object({ type: z.literal('yaml-schema'), ...target, schema: z.record(z.string(), z.unknown()) }),
    /** Markdown structure: these headings in this order (`## Usage` is level 2), and optionally a fenced code block. */
    z.object({ type: z.literal('markdown'), ...target, headings: z.array(z.string().regex(/^#{1,6} \S/)).min(1), requireCodeBlock: z.boolean().optional() }),
  ])
  .refine((check) => exactlyOne(check, ['path', 'stdout']), { message: 'an output check reads exactly one of `path` or `stdout`' })
  .refine((check) => !(check.type === 'content' || check.type === 'csv' || check.type === 'json') || exactlyOne(check, ['expected', 'expectedFile']), {
    message: 'a content, csv or json check takes exactly one of `expected` or `expectedFile`',
  });
export type OutputCheck = z.infer<typeof OutputCheck>;

/** For data-processing and document tasks: optionally run a command (the agent's script), then check what it produced. */
export const OutputVerification = z.object({
  kind: z.literal('output'),
  command: Command.optional(),
  checks: z.array(OutputCheck).min(1),
  timeoutMs: CheckTimeoutMs.optional(),
});
export type OutputVerification = z.infer<typeof OutputVerification>;

/**
 * The reward of a verification, part of the verifier version. `binary`: 1 when passed, else 0. `fraction`: the
 * share of listed tests or output checks that passed, or the script's own reward. A hack flag always scores 0.
 * `turnPenalty` is subtracted once per tool call of the episode, the reward floored at 0.
 */
export const RewardSpec = z.object({
  /** @default 'binary' */
  shape: z.enum(['binary', 'fraction']).optional(),
  /** @default 0 */
  turnPenalty: z.number().min(0).max(1).optional(),
});
export type RewardSpec = z.infer<typeof RewardSpec>;

/** Every check kind a spec may name (each run by a verification kind in pipelines/verifier/kinds/). */
const CHECKS = [TestsVerification, ScriptVerification, OutputVerification] as const;

/** The names of the check kinds, as a Verification records which one decided (`Verification.checkKind`). */
export const CheckKind = z.enum(CHECKS.map((check) => check.shape.kind.value) as [(typeof CHECKS)[number]['shape']['kind']['value'], ...(typeof CHECKS)[number]['shape']['kind']['value'][]]);
export type CheckKind = z.infer<typeof CheckKind>;

export const VerificationSpec = z.object({
  check: z.discriminatedUnion('kind', CHECKS),
  /** @default { shape: 'binary', turnPenalty: 0 } */
  reward: RewardSpec.optional(),
});
export type VerificationSpec = z.infer<typeof VerificationSpec>;

/**
 * What a task without a spec gets: program repair's pytest run over every visible and hidden test module,
 * every collected test expected to pass (the lists stay empty: the verifier collects the ids itself).
 */
export const PYTEST_REPAIR_VERIFICATION: VerificationSpec = { check: { kind: 'tests', runner: 'pytest', failToPass: [], passToPass: [] } };

/**
 * A file tree kept in the artifact store instead of inline in a record (a claim check): the digest of its
 * manifest, whose entries name each file's content digest. Records carrying one stay small whatever the tree's size.
 */
export const TreeRef = z.object({
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  files: z.number().int().min(0),
  bytes: z.number().int().min(0),
});
export type TreeRef = z.infer<typeof TreeRef>;
