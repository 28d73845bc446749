import { z } from 'zod';
import { treeBytes } from '../../connectors/artifacts/index.js';
import { limitsForWorkspace, WORKSPACE, type ExecResult, type Sandbox } from '../../connectors/sandbox/index.js';
import { type FileTree, type Task, type ToolCall, type ToolResult, type WorkspaceExtras } from '../../schemas/index.js';
import { checkToolCall, isAgentError, tool, toolResults, ToolRefusal } from '../tools.js';
import type { AgentObservation, EnvDeps, EnvStep, EnvTruncation, Environment } from '../types.js';

export const WORKSPACE_ENV = 'workspace/v1';

/** Longest a bash command may run; an agent asking for more is told the cap. */
export const MAX_BASH_SECONDS = 300;
const DEFAULT_BASH_SECONDS = 60;
/** Characters of a tool's output the agent reads (head and tail kept). */
const MAX_OBSERVED_OUTPUT = 16_000;
const { ok, fail, clip } = toolResults(MAX_OBSERVED_OUTPUT);
/** Largest file read_file, write_file and str_replace handle, and the snapshot carries to the verifier. */
export const MAX_WORKSPACE_FILE_BYTES = 8 * 1024 * 1024;
/** Folders the final snapshot leaves out wherever they are: caches the interpreter or test runner wrote. */
export const SNAPSHOT_SKIP_DIRS = ['__pycache__', '.pytest_cache'] as const;
const SEARCH_TOOL = '/opt/trialrun/trialrun_search.py';

const Line = z.int().min(1);

/** The tools agents use in OpenHands, SWE-agent, R2E-Gym and Terminal-Bench, defined once. */
export const WORKSPACE_TOOL_DEFS = [
  tool('bash', `Run a bash command in the workspace (its output, capped, and its exit code come back). Nothing is kept between calls but the files.`, {
    command: z.string().min(1),
    timeoutSeconds: z.int().min(1).max(MAX_BASH_SECONDS).optional().describe(`seconds before the command and everything it started are killed (default ${DEFAULT_BASH_SECONDS})`),
  }),
  tool('read_file', 'Read a text file of the workspace, or lines startLine..endLine of it (1-based, inclusive).', { path: z.string(), startLine: Line.optional(), endLine: Line.optional() }),
  tool('write_file', 'Create or replace a file of the workspace with new contents.', { path: z.string(), content: z.string() }),
  tool('str_replace', 'Replace the one occurrence of `old` in a file with `new`; `old` must occur exactly once (include surrounding lines to make it unique).', {
    path: z.string(),
    old: z.string().min(1),
    new: z.string(),
  }),
  tool('search', 'Search file contents with a Python regular expression; `path` is an optional glob over workspace paths (`src/**/*.py`).', { pattern: z.string().min(1), path: z.string().min(1).optional() }),
  tool('submit', 'Submit the workspace as the final answer; ends the episode.', {}),
] as const;
export type WorkspaceTool = (typeof WORKSPACE_TOOL_DEFS)[number]['name'];

export interface WorkspaceObservation extends AgentObservation {
  /** The starting tree's paths, sorted. */
  readonly files: readonly string[];
  /** Name of the previous tool call; null at the start. */
  readonly lastTool: string | null;
}


/**
 * A generic workspace: the task's multi-file tree in a fresh sandbox (any language its image has), worked on
 * with bash, file reads and writes, a unique-match edit and a search, then submitted. The final files are a
 * snapshot of the whole workspace, so whatever bash wrote reaches the verifier like any other write.
 */
export class WorkspaceEnv implements Environment<WorkspaceObservation> {
  protected sandbox: Sandbox | null = null;
  protected state: WorkspaceObservation | null = null;

  constructor(
    protected readonly deps: EnvDeps,
    private readonly defaultImage: string,
  ) {}

  get imageDigest(): string | null {
    return this.sandbox?.imageDigest ?? null;
  }

  get maxTurns(): number {
    return this.deps.maxTurns;
  }

  async init(task: Task): Promise<WorkspaceObservation> {
    const limits = limitsForWorkspace(treeBytes(task.files), task.limits);
    this.sandbox = await this.deps.pool.acquire({ image: this.deps.imageFor(task.image ?? this.defaultImage), runId: this.deps.runId, taskId: task.taskId, limits });
    await this.sandbox.writeFiles(task.files);
    this.state = { description: task.description, files: Object.keys(task.files).sort(), turn: 0, maxTurns: this.deps.maxTurns, lastTool: null, lastResult: null };
    return this.state;
  }

  async step(action: ToolCall, signal?: AbortSignal): Promise<EnvStep<WorkspaceObservation>> {
    const sandbox = this.sandbox;
    const state = this.state;
    if (!sandbox || !state) throw new Error('WorkspaceEnv.step called before init');
    const started = performance.now();
    let result: ToolResult;
    let final: FinalWorkspace | null = null;
    try {
      const call = checkToolCall(WORKSPACE_TOOL_DEFS, action);
      const args = call.args;
      switch (call.name) {
        case 'bash': {
          const seconds = (args.timeoutSeconds as number | undefined) ?? DEFAULT_BASH_SECONDS;
          result = commandResult(await sandbox.exec(['bash', '-c', args.command as string], { timeoutMs: seconds * 1000, maxOutputBytes: MAX_OBSERVED_OUTPUT, signal }), seconds);
          break;
        }
        case 'read_file': {
          const text = await sandbox.readFile(args.path as string, WORKSPACE, { maxBytes: MAX_WORKSPACE_FILE_BYTES });
          result = ok(lineRange(text, args.path as string, args.startLine as number | undefined, args.endLine as number | undefined));
          break;
        }
        case 'write_file': {
          await sandbox.writeFiles({ [args.path as string]: sized(args.content as string, 'write_file') });
          result = ok('written');
          break;
        }
        case 'str_replace': {
          const path = args.path as string;
          const text = await sandbox.readFile(path, WORKSPACE, { maxBytes: MAX_WORKSPACE_FILE_BYTES });
          const parts = text.split(args.old as string);
          const count = parts.length - 1;
          if (count !== 1) throw new ToolRefusal(`str_replace: \`old\` occurs ${count} times in ${path}; it must occur exactly once${count > 1 ? ' (include surrounding lines to make it unique)' : ''}`);
          await sandbox.writeFiles({ [path]: sized(parts.join(args.new as string), 'str_replace') });
          result = ok(`replaced 1 occurrence in ${path}`);
          break;
        }
        case 'search': {
          const exec = await sandbox.exec(['python3', SEARCH_TOOL, args.pattern as string, ...(args.path === undefined ? [] : [args.path as string])], { timeoutMs: 30_000, maxOutputBytes: MAX_OBSERVED_OUTPUT, signal });
          if (exec.status !== 'exited' || exec.exitCode === 2) throw new ToolRefusal(`search failed: ${exec.status === 'timeout' ? 'it ran past 30 s' : exec.status === 'oom' ? 'it ran out of memory' : exec.stderr.trim()}`);
          result = exec.exitCode === 1 ? ok('no matches') : { ...ok(exec.stdout), truncated: exec.truncated };
          break;
        }
        case 'submit': {
          final = await this.finalWorkspace();
          result = ok(final.skipped.length === 0 ? 'submitted' : `submitted; not carried to the verifier:\n${final.skipped.join('\n')}`);
          break;
        }
      }
    } catch (error) {
      // What the agent asked for is wrong (a malformed call, a bad path, a missing file, no unique match): it
      // sees why and the episode goes on. Anything else is the sandbox's or ours, and is not its to see.
      if (!isAgentError(error)) throw error;
      result = fail(error.message);
    }
    const observation: WorkspaceObservation = { ...state, turn: state.turn + 1, lastTool: typeof action?.name === 'string' ? action.name : null, lastResult: result };
    this.state = observation;
    return { observation, result, done: final !== null, truncated: false, finalFiles: final?.files ?? null, finalExtras: final?.extras, sandboxMs: performance.now() - started };
  }

  async truncate(): Promise<EnvTruncation> {
    if (!this.sandbox) throw new Error('WorkspaceEnv.truncate called before init');
    const started = performance.now();
    const final = await this.finalWorkspace();
    return { finalFiles: final.files, finalExtras: final.extras, sandboxMs: performance.now() - started };
  }

  async close(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = null;
    await sandbox?.release();
  }

  describe(observation: WorkspaceObservation): string {
    const last = observation.lastResult ? `, last ${observation.lastTool ?? '?'} ${observation.lastResult.ok ? 'ok' : 'failed'}` : '';
    return `turn ${observation.turn}/${observation.maxTurns}: ${observation.files.length} files${last}`;
  }

  /** The whole workspace as it is now: every name read as bytes, symlinks as symlinks, what cannot be carried listed. */
  protected async finalWorkspace(): Promise<FinalWorkspace> {
    const snapshot = await this.sandbox!.snapshot({ maxFileBytes: MAX_WORKSPACE_FILE_BYTES, skipDirs: SNAPSHOT_SKIP_DIRS });
    return { files: snapshot.files, extras: snapshot.extras, skipped: snapshot.skipped.map((entry) => `${JSON.stringify(entry.path)}: ${entry.reason}`) };
  }
}

export interface FinalWorkspace {
  readonly files: FileTree;
  readonly extras: WorkspaceExtras;
  readonly skipped: readonly string[];
}

/** A bash run as the agent reads it: stdout, stderr, and how it ended. Only a clean exit 0 is ok. */
export function commandResult(exec: ExecResult, seconds: number): ToolResult {
  const streams = [exec.stdout, exec.stderr && `[stderr]\n${exec.stderr}`].filter(Boolean).join(exec.stdout.endsWith('\n') || !exec.stdout ? '' : '\n');
  const ending =
    exec.status === 'timeout'
      ? `[timed out after ${seconds} s: the command and everything it started were killed]`
      : exec.status === 'oom'
        ? '[killed: the sandbox ran out of memory]'
        : `[exit code ${exec.exitCode}]`;
  const output = `${streams}${streams && !streams.endsWith('\n') ? '\n' : ''}${ending}`;
  return { ok: exec.status === 'exited' && exec.exitCode === 0, output: clip(output), truncated: exec.truncated || output.length > MAX_OBSERVED_OUTPUT, exitCode: exec.exitCode };
}

/** Lines start..end (1-based, inclusive) of a file; the whole file when neither is given. */
function lineRange(text: string, path: string, start: number | undefined, end: number | undefined): string {
  if (start === undefined && end === undefined) return text;
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  const first = start ?? 1;
  const last = Math.min(end ?? lines.length, lines.length);
  if (end !== undefined && end < first) throw new ToolRefusal(`read_file: endLine ${end} is before startLine ${first}`);
  if (first > lines.length) throw new ToolRefusal(`read_file: ${path} has ${lines.length} lines; startLine ${first} is past its end`);
  return lines.slice(first - 1, last).join('\n') + (last < lines.length || text.endsWith('\n') ? '\n' : '');
}

function sized(content: string, toolName: string): string {
  const bytes = Buffer.byteLength(content);
  if (bytes > MAX_WORKSPACE_FILE_BYTES) throw new ToolRefusal(`${toolName}: the file would be ${bytes} bytes; files up to ${MAX_WORKSPACE_FILE_BYTES} bytes can be written (and reach the verifier)`);
  return content;
}

