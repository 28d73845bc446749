import type { SandboxPool } from '../connectors/sandbox/index.js';
import type { FileTree, Task, ToolCall, ToolResult, WorkspaceExtras } from '../schemas/index.js';

/** One transition, Gymnasium-style: what the tool returned, what the agent now sees, and whether it is over. */
export interface EnvStep<Obs> {
  readonly observation: Obs;
  readonly result: ToolResult;
  readonly done: boolean;
  /** Set on the final step: the files the verifier will score. */
  readonly finalFiles: FileTree | null;
  /** Set with finalFiles when the workspace holds names or symlinks a FileTree cannot carry; none when absent. */
  readonly finalExtras?: WorkspaceExtras;
  /** Time this step spent in the sandbox. */
  readonly sandboxMs: number;
}

/** Environments expose only init, step and close, and are created by registered id. */
export interface Environment<Obs> {
  init(task: Task, signal?: AbortSignal): Promise<Obs>;
  step(action: ToolCall, signal?: AbortSignal): Promise<EnvStep<Obs>>;
  /** Releases the sandbox; safe to call more than once and after a failure. */
  close(): Promise<void>;
  /** Digest of the sandbox image, for lineage; null before init. */
  readonly imageDigest: string | null;
  /** Renders an observation as the short text stored in the trajectory. */
  describe(observation: Obs): string;
}

export interface EnvDeps {
  readonly pool: SandboxPool;
  readonly runId: string;
  /** Resolves a sandbox recipe name (e.g. 'python-repair') to its image tag. */
  readonly imageFor: (recipe: string) => string;
  /** Episode length cap in tool calls. */
  readonly maxTurns: number;
}

export type EnvFactory = (deps: EnvDeps) => Environment<unknown>;

const registry = new Map<string, EnvFactory>();

export function registerEnv(id: string, factory: EnvFactory): void {
  if (registry.has(id)) throw new Error(`environment "${id}" is already registered`);
  registry.set(id, factory);
}

export function makeEnv(id: string, deps: EnvDeps): Environment<unknown> {
  const factory = registry.get(id);
  if (!factory) throw new Error(`unknown environment "${id}"; registered: ${[...registry.keys()].join(', ') || 'none'}`);
  return factory(deps);
}

export function registeredEnvs(): string[] {
  return [...registry.keys()];
}
