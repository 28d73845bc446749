import type { Sandbox } from '../../connectors/sandbox/index.js';
import { ConfigError, SandboxError, type FileTree, type Task, type ToolCall, type ToolResult } from '../../schemas/index.js';
import type { EnvDeps, EnvStep, Environment } from '../types.js';
import { functionSpans, type CandidateEdit, type RepairObservation } from './observation.js';
import { parsePytestOutput } from './pytest-output.js';

export const PROGRAM_REPAIR_ENV = 'program-repair/v1';
export const REPAIR_TOOLS = ['read_file', 'write_file', 'run_tests', 'list_edits', 'apply_edit', 'revert', 'submit'] as const;
export type RepairTool = (typeof REPAIR_TOOLS)[number];

/** The tools as function-calling specs (JSON Schema parameters), for LLM agents. */
export const REPAIR_TOOL_SPECS: ReadonlyArray<{ name: RepairTool; description: string; parameters: Record<string, unknown> }> = [
  { name: 'read_file', description: 'Read a file in the workspace.', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false } },
  { name: 'write_file', description: 'Replace a file in the workspace with new contents.', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false } },
  { name: 'run_tests', description: 'Run the visible tests and show pytest output.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
  { name: 'list_edits', description: 'List candidate single-site edits of the module (each has an id).', parameters: { type: 'object', properties: {}, additionalProperties: false } },
  { name: 'apply_edit', description: 'Apply one candidate edit by id (reverting any edit applied before).', parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false } },
  { name: 'revert', description: 'Undo the applied edit.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
  { name: 'submit', description: 'Submit the workspace as the final answer; ends the episode.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
];

const IMAGE_RECIPE = 'python-repair';
const REPAIR_TOOL = '/opt/trialrun/trialrun_repair.py';
const MAX_OBSERVED_OUTPUT = 4_000;

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

  async init(task: Task): Promise<RepairObservation> {
    const modules = Object.keys(task.files);
    if (modules.length !== 1) throw new ConfigError(`task ${task.taskId}: program repair needs exactly one module in files, got ${modules.length}`);
    const modulePath = modules[0]!;
    this.task = task;
    this.sandbox = await this.deps.pool.acquire({ image: this.deps.imageFor(IMAGE_RECIPE), runId: this.deps.runId, taskId: task.taskId });
    await this.sandbox.writeFiles({ ...task.files, ...task.visibleTests });
    const source = task.files[modulePath]!;
    this.state = {
      description: task.description,
      modulePath,
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
    const next = { ...state, turn: state.turn + 1, lastTool: action.name };
    // A mutant can loop forever; a visible-test run that long is a failure, not something to wait for.
    const run = async (command: string[], timeoutMs = 10_000) => sandbox.exec(command, { timeoutMs, signal });
    const tool = action.name as RepairTool;
    let result: ToolResult;
    let observation: RepairObservation = next;
    let finalFiles: FileTree | null = null;

    try {
      switch (tool) {
        case 'read_file': {
          const path = stringArg(action, 'path');
          const files = await sandbox.readFiles([path]).catch((error: unknown) => ({ error }));
          result = 'error' in files ? fail(`cannot read ${path}`) : ok(files[path] ?? '');
          break;
        }
        case 'write_file': {
          await sandbox.writeFiles({ [stringArg(action, 'path')]: stringArg(action, 'content') });
          result = ok('written');
          break;
        }
        case 'run_tests': {
          const exec = await run(['python3', '-m', 'pytest', '-q', '--tb=short', '-p', 'no:cacheprovider', ...Object.keys(this.task.visibleTests)]);
          const output = `${exec.stdout}${exec.stderr}`;
          const summary = parsePytestOutput(output, exec.exitCode, state.modulePath);
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
          const id = numberArg(action, 'id');
          if (state.applied) await this.repairTool(run, ['revert', state.modulePath]);
          const applied = (await this.repairTool(run, ['apply', state.modulePath, String(id)])).applied as CandidateEdit;
          observation = { ...next, applied: state.edits?.find((edit) => edit.id === id) ?? applied, lastTests: null };
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
          finalFiles = await this.finalFiles();
          result = ok('submitted');
          break;
        }
        default:
          result = fail(`unknown tool "${action.name}"; tools: ${REPAIR_TOOLS.join(', ')}`);
      }
    } catch (error) {
      // A malformed call (from an LLM, say) is the agent's mistake: it sees the reason and the episode goes on.
      if (!(error instanceof ConfigError)) throw error;
      result = fail(error.message);
    }
    if (!finalFiles && observation.turn >= observation.maxTurns) finalFiles = await this.finalFiles();
    observation = { ...observation, lastResult: result };
    this.state = observation;
    return { observation, result, done: finalFiles !== null, finalFiles, sandboxMs: performance.now() - started };
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

  /** Every file the agent left in the workspace except the visible tests, whose pristine copies the verifier brings. */
  private async finalFiles(): Promise<FileTree> {
    const listing = await this.sandbox!.exec(['find', '.', '-type', 'f', '-size', '-1024k', '-not', '-path', '*/__pycache__/*', '-printf', '%P\\n']);
    const paths = listing.stdout.split('\n').filter((path) => path && !(path in this.task!.visibleTests));
    return this.sandbox!.readFiles(paths);
  }

  private async repairTool(run: (command: string[]) => ReturnType<Sandbox['exec']>, args: string[]): Promise<Record<string, unknown>> {
    const exec = await run(['python3', REPAIR_TOOL, ...args]);
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(exec.stdout) as Record<string, unknown>;
    } catch {
      throw new SandboxError(`repair tool ${args[0]} gave no JSON (exit ${exec.exitCode}): ${exec.stderr.slice(0, 500)}`);
    }
    if (exec.exitCode !== 0) throw new SandboxError(`repair tool ${args.join(' ')} failed: ${String(parsed.error ?? exec.stderr)}`);
    return parsed;
  }
}

const ok = (output: string): ToolResult => ({ ok: true, output: clip(output), truncated: output.length > MAX_OBSERVED_OUTPUT, exitCode: 0 });
const fail = (output: string): ToolResult => ({ ok: false, output: clip(output), truncated: false, exitCode: null });
const clip = (text: string): string => (text.length > MAX_OBSERVED_OUTPUT ? `${text.slice(0, MAX_OBSERVED_OUTPUT / 2)}\n...\n${text.slice(-MAX_OBSERVED_OUTPUT / 2)}` : text);

function stringArg(action: ToolCall, name: string): string {
  const value = action.arguments[name];
  if (typeof value !== 'string') throw new ConfigError(`tool ${action.name}: argument "${name}" must be a string`);
  return value;
}

function numberArg(action: ToolCall, name: string): number {
  const value = action.arguments[name];
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new ConfigError(`tool ${action.name}: argument "${name}" must be a whole number`);
  return value;
}
