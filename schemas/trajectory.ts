import { z } from 'zod';
import { FileTree, Lineage } from './lineage.js';
import { WorkspaceExtras } from './workspace.js';

/** What the policy chose among discrete candidates, kept so the learner can compute gradients from the stream. */
export const PolicyDecision = z.object({
  /** One feature vector per candidate action, in the policy's feature order. */
  features: z.array(z.array(z.number())),
  chosen: z.number().int().min(0),
  logprob: z.number(),
});
export type PolicyDecision = z.infer<typeof PolicyDecision>;

export const ToolCall = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ToolResult = z.object({
  ok: z.boolean(),
  output: z.string(),
  /** True when the output was cut to the sandbox's per-stream cap. */
  truncated: z.boolean(),
  exitCode: z.number().int().nullable(),
});
export type ToolResult = z.infer<typeof ToolResult>;

/** One model call behind a step, when an LLM chose the action. */
export const LlmCall = z.object({
  model: z.string(),
  /** Assistant text that came with the tool call, if any. */
  content: z.string().nullable(),
  finishReason: z.string().nullable(),
  promptTokens: z.number().int().min(0).nullable(),
  completionTokens: z.number().int().min(0).nullable(),
  /** Per-token logprobs of the reply, when the server returned them. */
  logprobs: z.array(z.number()).nullable(),
  latencyMs: z.number().min(0),
  attempts: z.number().int().min(1),
});
export type LlmCall = z.infer<typeof LlmCall>;

export const Step = z.object({
  index: z.number().int().min(0),
  /** The (possibly shortened) observation the policy acted on. */
  observation: z.string(),
  toolCall: ToolCall,
  toolResult: ToolResult,
  decision: PolicyDecision.nullable(),
  llm: LlmCall.nullable().default(null),
  startedAt: z.iso.datetime(),
  durationMs: z.number().min(0),
  /** Time spent waiting on the sandbox within this step. */
  sandboxMs: z.number().min(0),
});
export type Step = z.infer<typeof Step>;

export const TrajectoryOutcome = z.enum(['submitted', 'max-turns', 'sandbox-error', 'timeout']);
export type TrajectoryOutcome = z.infer<typeof TrajectoryOutcome>;

export const Trajectory = z.object({
  trajectoryId: z.string().min(1),
  /** The G samples of one task under one policy version share a group. */
  groupId: z.string().min(1),
  groupSize: z.number().int().min(1),
  envId: z.string().min(1),
  policyId: z.string().min(1),
  steps: z.array(Step),
  /** The agent's files at the end of the episode; what the verifier scores. */
  finalFiles: FileTree,
  /** Non-UTF-8 names and symlinks of the final workspace (empty for records written before it existed). */
  finalExtras: WorkspaceExtras.default({ escapedPaths: [], symlinks: [] }),
  outcome: TrajectoryOutcome,
  error: z.string().nullable(),
  totalMs: z.number().min(0),
  sandboxMs: z.number().min(0),
  lineage: Lineage,
});
export type Trajectory = z.infer<typeof Trajectory>;
