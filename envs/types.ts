import type { z } from 'zod';
import type { EpisodeBudget, LlmGateway } from '../connectors/llm/index.js';
import type { SandboxPool } from '../connectors/sandbox/index.js';
import { ConfigError, describeIssues, type FileTree, type LlmCall, type Task, type ToolCall, type ToolResult, type VerificationSpec, type WorkspaceExtras } from '../schemas/index.js';
import { toolSpecs, type ToolDef, type ToolSpec } from './tools.js';

/** One transition, Gymnasium-style: what the tool returned, what the agent now sees, and whether it is over. */
export interface EnvStep<Obs> {
  readonly observation: Obs;
  readonly result: ToolResult;
  readonly done: boolean;
  /**
   * On the final step, whether a budget of the environment's own ended the episode rather than the agent (Gymnasium's
   * `truncated`: an agent program's wall time or its gateway budget); an episode the agent ended, by submitting or
   * answering, is `terminated`. False on every other step. The turn cap is not the environment's: runEpisode applies
   * it and ends the episode with `truncate`.
   */
  readonly truncated: boolean;
  /** Set on the final step: the files the verifier will score. */
  readonly finalFiles: FileTree | null;
  /** Set with finalFiles when the workspace holds names or symlinks a FileTree cannot carry; none when absent. */
  readonly finalExtras?: WorkspaceExtras;
  /** Time this step spent in the sandbox. */
  readonly sandboxMs: number;
  /** The model call this step records, where the environment's agent is a program (EnvSpec.agentProgram). */
  readonly llm?: LlmCall;
}

/** How an episode ends when it is cut off rather than ended by the agent: the files the verifier will score. */
export interface EnvTruncation {
  readonly finalFiles: FileTree;
  /** Set with finalFiles when the workspace holds names or symlinks a FileTree cannot carry; none when absent. */
  readonly finalExtras?: WorkspaceExtras;
  /** Time taking the final files spent in the sandbox. */
  readonly sandboxMs: number;
}

/** Environments expose init, step, truncate and close; the episode's end at the turn cap is decided by runEpisode, not here. */
export interface Environment<Obs> {
  init(task: Task, signal?: AbortSignal): Promise<Obs>;
  step(action: ToolCall, signal?: AbortSignal): Promise<EnvStep<Obs>>;
  /**
   * Ends the episode where it stands, as the turn cap does (Gymnasium's `truncated`): stops whatever the environment
   * runs for the agent and returns the final files, as a submit would take them. Called after init, at most once.
   */
  truncate(signal?: AbortSignal): Promise<EnvTruncation>;
  /** The episode's turn cap (EnvDeps.maxTurns), which runEpisode enforces. */
  readonly maxTurns: number;
  /** Releases the sandbox; safe to call more than once and after a failure. */
  close(): Promise<void>;
  /** Digest of the sandbox image, for lineage; null before init. */
  readonly imageDigest: string | null;
  /** Renders an observation as the short text stored in the trajectory. */
  describe(observation: Obs): string;
}

/** What every environment's observation holds, so that a policy serving any environment (a language model) can act on it. */
export interface AgentObservation {
  /** The task's prompt. */
  readonly description: string;
  readonly turn: number;
  readonly maxTurns: number;
  /** What the previous tool call returned; null at the start. */
  readonly lastResult: ToolResult | null;
}

export interface EnvDeps {
  readonly pool: SandboxPool;
  readonly runId: string;
  /** Resolves a sandbox recipe name (e.g. 'python-repair') to its image tag. */
  readonly imageFor: (recipe: string) => string;
  /**
   * The episode's turn cap: every reply counts, valid or not. runEpisode enforces it (the one place an episode is cut
   * off); an environment only shows it in its observation, and an agent program's gateway route takes no more calls.
   */
  readonly maxTurns: number;
  /**
   * For an environment whose agent is a program (EnvSpec.agentProgram): the command it runs in the sandbox and the
   * model gateway that opens each episode's route. @default none: the program's turn tool fails saying so
   */
  readonly agentProgram?: AgentProgramDeps;
}

/** The agent program of an episode: a command run in the task's sandbox, its model behind one gateway route. */
export interface AgentProgramDeps {
  /** Run with `bash -c` in /workspace. */
  readonly command: string;
  readonly gateway: Pick<LlmGateway, 'open' | 'url' | 'identity'>;
  /** What one episode may spend at the gateway; its calls are capped at the turn cap. @default resolveEpisodeBudget's */
  readonly budget?: EpisodeBudget;
}

/**
 * Everything trialrun needs to know about one environment (the Gymnasium/skyrl-gym registration, as data): its
 * tools, defined once in zod; the sandbox image it runs in; what a task of it must carry; how a task without a
 * verification spec is verified; what a language model is told; and how to make one.
 */
export interface EnvSpec<Obs extends AgentObservation = AgentObservation> {
  /** Registered id, versioned (`program-repair/v1`): tasks name it in `envId`. */
  readonly id: string;
  readonly summary: string;
  readonly tools: readonly ToolDef[];
  /** Sandbox image recipe (a folder of sandbox-images/) a task without `image` runs in. */
  readonly defaultImage: string;
  /** What a task of this environment must hold (its trees resolved from the artifact store first); checked at init and by the task job. */
  readonly taskPayload: z.ZodType;
  /** How a task without `verification` is verified. */
  readonly defaultVerification: VerificationSpec;
  /**
   * Single-turn environments: the model's whole reply, free text, is the one argument `argument` of tool `tool` (its
   * only action), so a language model answers in prose or code rather than with a tool call. @default replies are tool calls
   */
  readonly freeReply?: { readonly tool: string; readonly argument: string };
  /**
   * Set when the environment's agent is a program it runs itself (a harness in the sandbox, talking to the model
   * through the gateway): the rollout worker asks no policy, it steps the environment with `turnTool`, and each
   * step's model call is the one the environment reports (EnvStep.llm). @default the policy acts
   */
  readonly agentProgram?: { readonly turnTool: string };
  /** For language-model agents: the system prompt, and the first user message for an episode. */
  readonly prompt: { readonly instructions: string; opening(observation: Obs): string };
  create(deps: EnvDeps): Environment<Obs>;
}

// Specs are looked up by the id a task names; each spec's observation type is its own business.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyEnvSpec = EnvSpec<any>;

/** The function-calling specs of an environment's tools (JSON Schema derived from their zod arguments). */
export const envToolSpecs = (spec: AnyEnvSpec): ToolSpec[] => toolSpecs(spec.tools);

/** Throws a ConfigError naming every field of the task that its environment's payload schema refuses. */
export function checkTaskPayload(spec: AnyEnvSpec, task: Task): void {
  const parsed = spec.taskPayload.safeParse(task);
  if (!parsed.success) throw new ConfigError(`task ${task.taskId} is not a valid ${spec.id} task:\n  ${describeIssues(parsed.error).join('\n  ')}`);
}

/** The registered environments, built from an explicit list (nothing registers itself by being imported). */
export class EnvRegistry {
  private readonly specs: ReadonlyMap<string, AnyEnvSpec>;

  constructor(specs: readonly AnyEnvSpec[]) {
    const byId = new Map<string, AnyEnvSpec>();
    for (const spec of specs) {
      if (byId.has(spec.id)) throw new ConfigError(`environment "${spec.id}" is listed twice`);
      byId.set(spec.id, spec);
    }
    this.specs = byId;
  }

  ids(): string[] {
    return [...this.specs.keys()];
  }

  has(id: string): boolean {
    return this.specs.has(id);
  }

  get(id: string): AnyEnvSpec {
    const spec = this.specs.get(id);
    if (!spec) throw new ConfigError(`unknown environment "${id}"; registered: ${this.ids().join(', ') || 'none'}`);
    return spec;
  }

  make(id: string, deps: EnvDeps): Environment<unknown> {
    return this.get(id).create(deps);
  }
}
