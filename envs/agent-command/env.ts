import { connect } from 'node:net';
import { resolveEpisodeBudget, type GatewayRoute } from '../../connectors/llm/index.js';
import type { ExecResult, LoopbackForward, Sandbox } from '../../connectors/sandbox/index.js';
import type { LlmCall, Task, ToolCall, ToolResult } from '../../schemas/index.js';
import { tool, toolResults } from '../tools.js';
import type { AgentProgramDeps, EnvDeps, EnvStep, EnvTruncation } from '../types.js';
import { commandResult, WORKSPACE_TOOL_DEFS, WorkspaceEnv, type FinalWorkspace, type WorkspaceObservation } from '../workspace/index.js';

export const AGENT_COMMAND_ENV = 'agent-command/v1';
/** The one tool the rollout worker steps the environment with. */
export const AGENT_TURN = 'agent_turn';
/** Characters of the program's output and of what it sent the model that a step keeps. */
const MAX_OBSERVED_OUTPUT = 16_000;
const { ok, fail, clip } = toolResults(MAX_OBSERVED_OUTPUT);

export const AGENT_COMMAND_TOOL_DEFS = [
  ...WORKSPACE_TOOL_DEFS,
  tool(AGENT_TURN, "Let the agent program work until its next model call is answered, or until it exits: the step records that call (the previous one's follow-up is what the program sent the model next).", {}),
] as const;

/** What the agent program did since the last step. */
type ProgramEvent = { readonly kind: 'call'; readonly call: LlmCall; readonly sentSinceReply: string } | { readonly kind: 'exit'; readonly exec: ExecResult } | { readonly kind: 'budget'; readonly what: string };

/**
 * A workspace whose agent is a program run in the task's sandbox (a harness such as mini-swe-agent), given the
 * episode's own gateway route as OPENAI_BASE_URL / OPENAI_API_KEY. The sandbox has no network: the route is a loopback
 * port inside it that the executor carries to the gateway (Sandbox.forward), and the key opens only this episode's
 * route. Each `agent_turn` step is one model call, recorded token-exact by the gateway, whose result is what the
 * program sent the model next; the episode ends when the program exits (terminated) or its gateway budget (whose
 * calls are capped at the turn cap) or its wall time runs out (truncated, the program killed). The final files are
 * the workspace snapshot.
 * The workspace tools stay available to a caller that wants to look inside.
 */
export class AgentCommandEnv extends WorkspaceEnv {
  private program: RunningProgram | null = null;

  constructor(deps: EnvDeps, defaultImage: string) {
    super(deps, defaultImage);
  }

  override async init(task: Task): Promise<WorkspaceObservation> {
    const observation = await super.init(task);
    if (this.deps.agentProgram) this.program = await RunningProgram.start(this.sandbox!, task, this.deps.agentProgram, this.deps.maxTurns);
    return observation;
  }

  override async step(action: ToolCall, signal?: AbortSignal): Promise<EnvStep<WorkspaceObservation>> {
    if (action?.name !== AGENT_TURN) return super.step(action, signal);
    const state = this.state;
    if (!state) throw new Error('AgentCommandEnv.step called before init');
    const started = performance.now();
    const turn = state.turn + 1;
    const next = (observation: WorkspaceObservation, result: ToolResult, done: boolean, truncated: boolean, llm: LlmCall | undefined, final: FinalWorkspace | null): EnvStep<WorkspaceObservation> => {
      this.state = observation;
      return { observation, result, done, truncated, finalFiles: final?.files ?? null, finalExtras: final?.extras, sandboxMs: performance.now() - started, ...(llm ? { llm } : {}) };
    };
    const observationWith = (result: ToolResult): WorkspaceObservation => ({ ...state, turn, lastTool: AGENT_TURN, lastResult: result });
    const program = this.program;
    if (!program) {
      const result = fail(`${AGENT_COMMAND_ENV} runs no agent program here: the rollout worker starts one with --agent or --agent-command`);
      return next(observationWith(result), result, false, false, undefined, null);
    }
    // The turn this step records: the first call, unless the program ended before making one.
    const call = program.pending ?? (await program.nextCallOrEnd(signal));
    // After the route's last answerable call there is no next call to wait for: the program is stopped now.
    if (call.kind === 'call' && !program.callsSpent) {
      const after = await program.nextCallOrEnd(signal);
      if (after.kind === 'call') {
        program.pending = after;
        const result = ok(clip(after.sentSinceReply));
        return next(observationWith(result), result, false, false, call.call, null);
      }
      return this.end(program, after, call.call, observationWith, next);
    }
    return this.end(program, call.kind === 'call' ? { kind: 'budget', what: `its calls (${program.maxCalls})` } : call, call.kind === 'call' ? call.call : undefined, observationWith, next);
  }

  /** Stops the agent program, then takes the workspace as it is. */
  override async truncate(): Promise<EnvTruncation> {
    const program = this.program;
    this.program = null;
    const started = performance.now();
    await program?.stop();
    const end = await super.truncate();
    return { ...end, sandboxMs: performance.now() - started };
  }

  private async end(
    program: RunningProgram,
    how: ProgramEvent,
    llm: LlmCall | undefined,
    observationWith: (result: ToolResult) => WorkspaceObservation,
    next: (observation: WorkspaceObservation, result: ToolResult, done: boolean, truncated: boolean, llm: LlmCall | undefined, final: FinalWorkspace) => EnvStep<WorkspaceObservation>,
  ): Promise<EnvStep<WorkspaceObservation>> {
    program.pending = null;
    let result: ToolResult;
    let truncated: boolean;
    if (how.kind === 'exit') {
      // The program ending itself is the agent ending the episode, whatever its exit code; a timeout or the OOM killer is a budget.
      truncated = how.exec.status !== 'exited';
      result = commandResult(how.exec, Math.round(program.wallMs / 1000));
    } else {
      truncated = true;
      await program.stop();
      result = fail(`the agent program was stopped: ${how.kind === 'budget' ? how.what : ''}`);
    }
    const final = await this.finalWorkspace();
    return next(observationWith(result), result, true, truncated, llm, final);
  }

  override async close(): Promise<void> {
    const program = this.program;
    this.program = null;
    await program?.stop();
    await super.close();
  }
}

/** How long a stopped program may take to be gone before its workspace is read anyway. */
const STOP_WAIT_MS = 10_000;

/** The agent program of one episode: its command running in the sandbox, its route, and what it did not yet report. */
class RunningProgram {
  /** A call already taken from `events` that the next step records. */
  pending: Extract<ProgramEvent, { kind: 'call' }> | null = null;
  private readonly events: ProgramEvent[] = [];
  private wake: (() => void) | null = null;
  private exited = false;
  /** Calls the gateway answered and reported so far. */
  private callsAnswered = 0;
  private readonly stopper = new AbortController();
  /** Settles once the program's command has ended (exited, or killed with what it started). */
  private ended: Promise<void> = Promise.resolve();

  private constructor(
    private readonly route: GatewayRoute,
    private readonly forward: LoopbackForward,
    readonly wallMs: number,
    /** The route's call budget: the turn cap, or less where the budget says so. */
    readonly maxCalls: number,
  ) {}

  /** True once the route has answered all the calls it will, and none of them is left to record. */
  get callsSpent(): boolean {
    return this.callsAnswered >= this.maxCalls && !this.events.some((event) => event.kind === 'call');
  }

  static async start(sandbox: Sandbox, task: Task, deps: AgentProgramDeps, maxTurns: number): Promise<RunningProgram> {
    const budget = resolveEpisodeBudget({ ...deps.budget, maxCalls: Math.min(deps.budget?.maxCalls ?? maxTurns, maxTurns) });
    let program: RunningProgram | null = null;
    const route = deps.gateway.open(budget, {
      onCall: (call, sentSinceReply) => program?.push({ kind: 'call', call, sentSinceReply }),
      onBudgetSpent: (what) => program?.push({ kind: 'budget', what }),
    });
    const gateway = new URL(deps.gateway.url);
    let forward: LoopbackForward;
    try {
      forward = await sandbox.forward(() => connect(Number(gateway.port), gateway.hostname.replace(/^\[|\]$/g, '')));
    } catch (error) {
      await route.close();
      throw error;
    }
    program = new RunningProgram(route, forward, budget.maxWallMs, budget.maxCalls);
    const baseUrl = `http://127.0.0.1:${forward.port}${new URL(route.baseUrl).pathname}`;
    const env = {
      OPENAI_BASE_URL: baseUrl,
      OPENAI_API_BASE: baseUrl,
      OPENAI_API_KEY: route.apiKey,
      TRIALRUN_MODEL: deps.gateway.identity.model,
      TRIALRUN_TASK: task.description,
      TRIALRUN_MAX_TURNS: String(budget.maxCalls),
    };
    program.follow(sandbox.exec(['bash', '-c', deps.command], { env, cwd: '/workspace', timeoutMs: budget.maxWallMs, maxOutputBytes: MAX_OBSERVED_OUTPUT, signal: program.stopSignal }));
    return program;
  }

  /** Aborted by stop(): the program's command is killed. */
  get stopSignal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Follows the program's command: its end (or the sandbox failing under it) is the program's last event. */
  follow(exec: Promise<ExecResult>): void {
    this.ended = exec.then(
      (result) => this.push({ kind: 'exit', exec: result }),
      (error: unknown) => this.push({ kind: 'exit', exec: { status: 'exited', exitCode: null, stdout: '', stderr: `the sandbox failed under the program: ${String(error)}`, truncated: false, durationMs: 0 } }),
    );
  }

  private push(event: ProgramEvent): void {
    if (event.kind === 'exit') this.exited = true;
    if (event.kind === 'call') this.callsAnswered++;
    this.events.push(event);
    this.wake?.();
  }

  /** The program's next model call, or how it ended (it exited, or the gateway refused it for the budget). */
  async nextCallOrEnd(signal?: AbortSignal): Promise<ProgramEvent> {
    for (;;) {
      signal?.throwIfAborted();
      const event = this.events.shift();
      // A budget refusal ends the episode only once its calls are all recorded; the program may yet exit by itself.
      if (event) return event;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      this.wake = null;
    }
  }

  /** Kills the program and everything it started, and ends the route and the forwarding. */
  async stop(): Promise<void> {
    if (!this.exited) this.stopper.abort();
    // The workspace is read next: a program still dying could write into it while it is read. Cancelling kills
    // as a timeout does, and the command settles once its processes are gone; bounded, so that a sandbox that
    // never answers again does not hold the episode (its own deadlines end it then).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]).finally(() => clearTimeout(timer));
    this.forward.close();
    await this.route.close();
  }
}
