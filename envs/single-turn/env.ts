import { z } from 'zod';
import type { FileTree, Task, ToolCall, ToolResult } from '../../schemas/index.js';
import { checkToolCall, isAgentError, tool, toolResults } from '../tools.js';
import type { AgentObservation, EnvDeps, EnvStep, EnvTruncation, Environment } from '../types.js';

export const SINGLE_TURN_ENV = 'single-turn/v1';

/** Largest reply kept as the artifact; a longer one is refused (a model's reply is capped far below this by its token budget). */
export const MAX_REPLY_BYTES = 64 * 1024;
const { ok, fail } = toolResults(2_000);

/** The one action: the reply itself. A language model gives it as free text (`EnvSpec.freeReply`), not as a tool call. */
export const SINGLE_TURN_TOOL_DEFS = [tool('answer', 'Give the answer: the whole reply is the artifact that is checked.', { text: z.string().max(MAX_REPLY_BYTES) })] as const;

export interface SingleTurnObservation extends AgentObservation {
  /** Where the reply is written for the checks (the task's one file). */
  readonly replyPath: string;
}

/** The path a single-turn task's reply is written to: the one file of its `files`, whose starting content is empty. */
export function replyPathOf(task: Pick<Task, 'files'>): string {
  const [path] = Object.keys(task.files);
  if (path === undefined) throw new Error('a single-turn task names the path of its reply as its one file');
  return path;
}

/**
 * Single-turn RL (a prompt, one reply, a verifier): the reply is the artifact. No sandbox is needed to act, so none is
 * taken; the reply becomes the final files at the task's path, and the verifier runs the task's checks on it in a
 * fresh grading sandbox as for every other environment. A call that is not a valid answer is a failed result and the
 * episode goes on, up to the turn cap (a language model's reply is always an answer); cut off there, the reply is the
 * task's starting (empty) file.
 */
export class SingleTurnEnv implements Environment<SingleTurnObservation> {
  private state: SingleTurnObservation | null = null;
  private starting: FileTree = {};

  constructor(private readonly deps: EnvDeps) {}

  /** No sandbox runs the agent's turn: the reply is graded in the verifier's. */
  get imageDigest(): string | null {
    return null;
  }

  get maxTurns(): number {
    return this.deps.maxTurns;
  }

  async init(task: Task): Promise<SingleTurnObservation> {
    this.starting = task.files;
    this.state = { description: task.description, replyPath: replyPathOf(task), turn: 0, maxTurns: this.deps.maxTurns, lastResult: null };
    return this.state;
  }

  async step(action: ToolCall): Promise<EnvStep<SingleTurnObservation>> {
    const state = this.state;
    if (!state) throw new Error('SingleTurnEnv.step called before init');
    let result: ToolResult;
    let final: FileTree | null = null;
    try {
      const call = checkToolCall(SINGLE_TURN_TOOL_DEFS, action);
      final = { [state.replyPath]: call.args.text as string };
      result = ok('answered');
    } catch (error) {
      if (!isAgentError(error)) throw error;
      result = fail(error.message);
    }
    const observation: SingleTurnObservation = { ...state, turn: state.turn + 1, lastResult: result };
    this.state = observation;
    return { observation, result, done: final !== null, truncated: false, finalFiles: final, sandboxMs: 0 };
  }

  async truncate(): Promise<EnvTruncation> {
    if (!this.state) throw new Error('SingleTurnEnv.truncate called before init');
    return { finalFiles: this.starting, sandboxMs: 0 };
  }

  async close(): Promise<void> {
    this.state = null;
  }

  describe(observation: SingleTurnObservation): string {
    return `turn ${observation.turn}/${observation.maxTurns}: reply to ${observation.replyPath}`;
  }
}
