import { z } from 'zod';
import { FileTree, Lineage } from './lineage.js';
import { TreeRef } from './verification-spec.js';
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

/**
 * The token ids of one model turn, as the inference engine saw and sampled them (token in, token out).
 * An episode's turns form one growing sequence: a turn that `extendsPrevious` has as its prompt the previous
 * turn's prompt + completion + `appendedPromptIds` (the tool result's turn, rendered through the chat template
 * once), so no earlier token is ever re-tokenised and the prompt is not repeated in the record. The loss mask is
 * implied: completion ids are the model's (1), prompt ids template, tool or environment tokens (0); see
 * `llmTokenSequence`.
 */
export const LlmTokens = z.object({
  /** The prompt tokens this turn added: the whole prompt when it does not extend the previous turn. */
  appendedPromptIds: z.array(z.number().int().min(0)),
  /** Tokens in this turn's whole prompt. */
  promptLength: z.number().int().min(0),
  /** True when the prompt is the previous turn's prompt + completion + appendedPromptIds. */
  extendsPrevious: z.boolean(),
  /** Every sampled token, an end-of-generation token included; `LlmCall.logprobs` has one logprob for each. */
  completionIds: z.array(z.number().int().min(0)),
});
export type LlmTokens = z.infer<typeof LlmTokens>;

/** The sampling parameters of one model turn. */
export const LlmSampling = z.object({
  temperature: z.number().min(0),
  topP: z.number().gt(0).max(1),
  maxTokens: z.number().int().min(1),
  /** The sampler's seed (null where the server takes none). */
  seed: z.number().int().nullable(),
});
export type LlmSampling = z.infer<typeof LlmSampling>;

/** One model call behind a step, when an LLM chose the action. Fields after `attempts` are absent from older records. */
export const LlmCall = z.object({
  model: z.string(),
  /** Assistant text that came with the tool call, if any. */
  content: z.string().nullable(),
  finishReason: z.string().nullable(),
  promptTokens: z.number().int().min(0).nullable(),
  completionTokens: z.number().int().min(0).nullable(),
  /** Per-token logprobs of the reply, when the server returned them (one per `tokens.completionIds`). */
  logprobs: z.array(z.number()).nullable(),
  latencyMs: z.number().min(0),
  attempts: z.number().int().min(1),
  /** Token ids in and out, where the server gives them (llama.cpp always; vLLM with return_token_ids). */
  tokens: LlmTokens.nullable().default(null),
  sampling: LlmSampling.nullable().default(null),
  /** Which tokenizer produced the ids (a hash of what the server reports). */
  tokenizer: z.string().nullable().default(null),
  /** sha256 of the chat template that rendered the prompt's template tokens. */
  chatTemplateSha256: z.string().nullable().default(null),
  /** The policy (weights) version that generated this turn. */
  policyVersion: z.number().int().min(0).nullable().default(null),
  /** True when decoding was constrained to valid calls of the environment's tools. */
  constrained: z.boolean().default(false),
  /** Why the reply was not a valid tool call (the turn failed, and the model was told); null when it was. */
  invalidReply: z.string().nullable().default(null),
});
export type LlmCall = z.infer<typeof LlmCall>;

/** An episode's model tokens as one sequence with its loss mask, as a trainer takes it. */
export interface LlmTokenSequence {
  readonly ids: number[];
  /** 1 for a token the model sampled, 0 for template, tool and environment tokens. */
  readonly lossMask: number[];
  /** The engine's logprob for each sampled token; 0 where the mask is 0. */
  readonly logprobs: number[];
}

/**
 * The token sequences of an episode's model turns: one while each prompt extends the previous one (the
 * prefix rule), a new one where a prompt does not. Steps without token ids are skipped.
 */
export function llmTokenSequences(steps: readonly Pick<Step, 'llm'>[]): LlmTokenSequence[] {
  const sequences: Array<{ ids: number[]; lossMask: number[]; logprobs: number[] }> = [];
  let current: (typeof sequences)[number] | null = null;
  for (const { llm } of steps) {
    const tokens = llm?.tokens;
    if (!llm || !tokens) continue;
    if (!current || !tokens.extendsPrevious || current.ids.length + tokens.appendedPromptIds.length !== tokens.promptLength) {
      // A prompt whose start is not recorded (it claims to extend what is not there) starts no sequence.
      if (tokens.appendedPromptIds.length !== tokens.promptLength) {
        current = null;
        continue;
      }
      current = { ids: [], lossMask: [], logprobs: [] };
      sequences.push(current);
    }
    current.ids.push(...tokens.appendedPromptIds, ...tokens.completionIds);
    current.lossMask.push(...tokens.appendedPromptIds.map(() => 0), ...tokens.completionIds.map(() => 1));
    current.logprobs.push(...tokens.appendedPromptIds.map(() => 0), ...tokens.completionIds.map((_, i) => llm.logprobs?.[i] ?? 0));
  }
  return sequences;
}

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
  /** Set when the final tree is in the artifact store (a claim check); `finalFiles` is `{}` then. */
  finalFilesRef: TreeRef.nullable().optional(),
  outcome: TrajectoryOutcome,
  error: z.string().nullable(),
  totalMs: z.number().min(0),
  sandboxMs: z.number().min(0),
  lineage: Lineage,
});
export type Trajectory = z.infer<typeof Trajectory>;
