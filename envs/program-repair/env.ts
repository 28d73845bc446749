import { WORKSPACE, type Sandbox } from '../../connectors/sandbox/index.js';
import { z } from 'zod';
import { ConfigError, type FileTree, type Task, type ToolCall, type ToolResult, type WorkspaceExtras } from '../../schemas/index.js';
import { checkToolCall, isAgentError, tool, toolResults, ToolRefusal } from '../tools.js';
import type { EnvDeps, EnvStep, EnvTruncation, Environment } from '../types.js';
import { functionSpans, type CandidateEdit, type RepairObservation } from './observation.js';
import { parsePytestOutput, observedTestOutput } from './pytest-output.js';

export const PROGRAM_REPAIR_ENV = 'program-repair/v1';

/** The tools, defined once: the argument check and the function-calling specs (`toolSpec`) both come from these. */
export const REPAIR_TOOL_DEFS = [
  tool('read_file', 'Read a file in the workspace.', { path: z.string() }),
  tool('write_file', 'Replace a file in the workspace with new contents.', { path: z.string(), content: z.string() }),
  tool('run_tests', 'Run the visible tests and show pytest output.', {}),
  tool('list_edits', 'List candidate single-site edits of the module (each has an id).', {}),
  tool('apply_edit', 'Apply one candidate edit by id (reverting any edit applied before).', { id: z.int() }),
  tool('revert', 'Undo the applied edit.', {}),
  tool('submit', 'Submit the workspace as the final answer; ends the episode.', {}),
] as const;
export const REPAIR_TOOLS = REPAIR_TOOL_DEFS.map((def) => def.name);
export type RepairTool = (typeof REPAIR_TOOL_DEFS)[number]['name'];

const IMAGE_RECIPE = 'python-repair';
const REPAIR_TOOL = '/opt/trialrun/trialrun_repair.py';
/** pytest on the visible tests, with the module's line spectrum as its last line (trialrun_tests.py). */
const TEST_RUNNER = '/opt/trialrun/trialrun_tests.py';
const MAX_OBSERVED_OUTPUT = 4_000;
/**
 * Held warm per sandbox: the visible-test runs and the edit helper are forked from one interpreter that
 * imported pytest, instead of each importing it again (0.3 s of CPU a run on a 2-core machine, most of it).
 */
const WARM_MODULES = ['pytest'];
const { ok, fail, clip } = toolResults(MAX_OBSERVED_OUTPUT);
/** Largest file read_file returns, write_file writes and the verifier is given. */
const MAX_FILE_BYTES = 1024 * 1024;

/**
 * Program repair: the agent gets one buggy module and its visible tests in a fresh sandbox (the hidden
 * tests never enter it), and may read and write files, run the visible tests, list and apply candidate
 * single-site edits (found by an `ast`-based helper in the image), revert, and submit.
 */
export class ProgramRepairEnv implements Environment<RepairObservation> {
  private sandbox: Sandbox | null = null;
  private task: Task | null = null;
  private state: RepairObservation | null = null;

  constructor(private readonly deps: EnvDeps) {}

  get imageDigest(): string | null {
    return this.sandbox?.imageDigest ?? null;
  }

  get maxTurns(): number {
    return this.deps.maxTurns;
  }

  async init(task: Task): Promise<RepairObservation> {
    const modules = Object.keys(task.files);
    if (modules.length !== 1) throw new ConfigError(`task ${task.taskId}: program repair needs exactly one module in files, got ${modules.length}`);
    const modulePath = modules[0]!;
    this.task = task;
    this.sandbox = await this.deps.pool.acquire({ image: this.deps.imageFor(task.image ?? IMAGE_RECIPE), runId: this.deps.runId, taskId: task.taskId });
    await this.sandbox.writeFiles({ ...task.files, ...task.visibleTests });
    const source = task.files[modulePath]!;
    this.state = {
      description: task.description,
      modulePath,
      moduleSource: source,
      moduleLineCount: source.split('\n').length,
      functions: functionSpans(source),
      turn: 0,
      maxTurns: this.deps.maxTurns,
      lastTests: null,
      baselineTests: null,
      edits: null,
      applied: null,
      tried: [],
      lastTool: null,
      lastResult: null,
    };
    return this.state;
  }

  async step(action: ToolCall, signal?: AbortSignal): Promise<EnvStep<RepairObservation>> {
    const sandbox = this.sandbox;
    const state = this.state;
    if (!sandbox || !state || !this.task) throw new Error('ProgramRepairEnv.step called before init');
    const started = performance.now();
    const next = { ...state, turn: state.turn + 1, lastTool: typeof action?.name === 'string' ? action.name : null };
    // A mutant can loop forever; a visible-test run that long is a failure, not something to wait for.
    const run = async (command: string[], timeoutMs = 10_000) => sandbox.exec(command, { timeoutMs, signal, preload: WARM_MODULES });
    let result: ToolResult;
    let observation: RepairObservation = next;
    let final: FinalWorkspace | null = null;

    try {
      const call = checkToolCall(REPAIR_TOOL_DEFS, action);
      switch (call.name) {
        case 'read_file': {
          const path = call.args.path as string;
          result = ok(await sandbox.readFile(path, WORKSPACE, { maxBytes: MAX_FILE_BYTES }));
          break;
        }
        case 'write_file': {
          const content = call.args.content as string;
          const bytes = Buffer.byteLength(content);
          if (bytes > MAX_FILE_BYTES) throw new ConfigError(`tool write_file: content is ${bytes} bytes; files up to ${MAX_FILE_BYTES} bytes can be written (and reach the verifier)`);
          await sandbox.writeFiles({ [call.args.path as string]: content });
          result = ok('written');
          break;
        }
        case 'run_tests': {
          const exec = await run(['python3', TEST_RUNNER, state.modulePath, ...Object.keys(this.task.visibleTests)]);
          const runnerOutput = `${exec.stdout}${exec.stderr}`;
          const summary = parsePytestOutput(runnerOutput, exec.exitCode, state.modulePath);
          const output = observedTestOutput(runnerOutput);
          observation = { ...next, lastTests: summary, baselineTests: state.baselineTests ?? (state.applied ? null : summary) };
          result = { ok: exec.status === 'exited', output: clip(output), truncated: exec.truncated || output.length > MAX_OBSERVED_OUTPUT, exitCode: exec.exitCode };
          break;
        }
        case 'list_edits': {
          const listing = await this.repairTool(run, ['list', state.modulePath]);
          const edits = (listing.edits as CandidateEdit[]).map(({ id, kind, line, col, before, after }) => ({ id, kind, line, col, before, after }));
          observation = { ...next, edits };
          result = ok([`${edits.length} candidate edits (apply_edit with an id):`, ...edits.map((e) => `#${e.id} ${e.kind} line ${e.line}:${e.col} ${e.before || '(nothing)'} -> ${e.after || '(nothing)'}`)].join('\n'));
          break;
        }
        case 'apply_edit': {
          const id = call.args.id as number;
          if (state.applied) {
            await this.repairTool(run, ['revert', state.modulePath]);
            // The earlier edit is undone whatever happens to this one (a failure below keeps this observation).
            observation = { ...next, applied: null, tried: [...state.tried, state.applied.id], lastTests: null };
          }
          const applied = (await this.repairTool(run, ['apply', state.modulePath, String(id)])).applied as CandidateEdit;
          observation = { ...observation, applied: state.edits?.find((edit) => edit.id === id) ?? applied, lastTests: null };
          result = ok(`applied edit ${id}: ${applied.kind} at line ${applied.line}: ${applied.before} -> ${applied.after}`);
          break;
        }
        case 'revert': {
          await this.repairTool(run, ['revert', state.modulePath]);
          observation = { ...next, applied: null, tried: state.applied ? [...state.tried, state.applied.id] : state.tried, lastTests: null };
          result = ok('reverted');
          break;
        }
        case 'submit': {
          final = await this.finalWorkspace();
          result = ok(final.skipped.length === 0 ? 'submitted' : `submitted; not carried to the verifier:\n${final.skipped.join('\n')}`);
          break;
        }
      }
    } catch (error) {
      // What the agent asked for is wrong (a malformed call, a bad path, a missing file, a full disk): it sees
      // the reason and the episode goes on. Anything else is the sandbox's or ours, and is not its to see.
      if (!isAgentError(error)) throw error;
      result = fail(error.message);
    }
    observation = { ...observation, lastResult: result };
    this.state = observation;
    return { observation, result, done: final !== null, truncated: false, finalFiles: final?.files ?? null, finalExtras: final?.extras, sandboxMs: performance.now() - started };
  }

  async truncate(): Promise<EnvTruncation> {
    if (!this.sandbox || !this.task) throw new Error('ProgramRepairEnv.truncate called before init');
    const started = performance.now();
    const final = await this.finalWorkspace();
    return { finalFiles: final.files, finalExtras: final.extras, sandboxMs: performance.now() - started };
  }

  async close(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = null;
    await sandbox?.release();
  }

  describe(observation: RepairObservation): string {
    const tests = observation.lastTests
      ? `tests ${observation.lastTests.passed ? 'pass' : `fail (${observation.lastTests.failedCount} failed, module lines ${observation.lastTests.moduleLines.join(',') || '-'})`}`
      : 'tests not run';
    const edits = observation.edits ? `${observation.edits.length} edits, ${observation.tried.length} tried` : 'edits not listed';
    const applied = observation.applied ? `, applied #${observation.applied.id} ${observation.applied.kind}` : '';
    return `turn ${observation.turn}/${observation.maxTurns}: ${tests}; ${edits}${applied}`;
  }

  /**
   * Everything the agent left in the workspace except the visible tests (the verifier brings pristine copies):
   * names read as bytes, so any name survives, and symlinks recorded as symlinks.
   */
  private async finalWorkspace(): Promise<FinalWorkspace> {
    const snapshot = await this.sandbox!.snapshot({ maxFileBytes: MAX_FILE_BYTES, skipDirs: ['__pycache__'] });
    const visible = this.task!.visibleTests;
    return {
      files: Object.fromEntries(Object.entries(snapshot.files).filter(([path]) => !Object.hasOwn(visible, path))),
      extras: { ...snapshot.extras, escapedPaths: snapshot.extras.escapedPaths.filter((path) => !Object.hasOwn(visible, path)) },
      skipped: snapshot.skipped.map((entry) => `${JSON.stringify(entry.path)}: ${entry.reason}`),
    };
  }

  /** The repair tool's JSON answer, or why it failed: an edit id out of range, a module the agent broke, a timeout. */
  /** Runs the in-image repair tool; a failure the agent caused (a bad id, a module it broke) is a ToolRefusal. */
  private async repairTool(run: (command: string[]) => ReturnType<Sandbox['exec']>, args: string[]): Promise<Record<string, unknown>> {
    const exec = await run(['python3', REPAIR_TOOL, ...args]);
    if (exec.status !== 'exited') throw new ToolRefusal(`${args[0]} did not finish: ${exec.status === 'timeout' ? 'it ran past its time limit' : 'it ran out of memory'}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(exec.stdout);
    } catch {
      parsed = null;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ToolRefusal(`${args[0]} failed (exit ${exec.exitCode}): ${clip(exec.stderr.trim() || exec.stdout.trim() || 'no output')}`);
    const answer = parsed as Record<string, unknown>;
    if (exec.exitCode !== 0) throw new ToolRefusal(`${args[0]} failed: ${typeof answer.error === 'string' ? answer.error : clip(exec.stderr)}`);
    return answer;
  }
}


interface FinalWorkspace {
  readonly files: FileTree;
  readonly extras: WorkspaceExtras;
  /** What the snapshot could not carry, one line each (name and reason), for the submit result. */
  readonly skipped: readonly string[];
}

