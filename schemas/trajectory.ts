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

/** Where a turn's prompt parted from the sequence the previous turn was given and sampled. */
export const LlmDrift = z.object({
  /** Tokens of the previous turn's prompt + completion: what this prompt should have started with. */
  previousTokens: z.number().int().min(0),
  /** How many of them this prompt does start with (the first drifted token's position). */
  matchingTokens: z.number().int().min(0),
});
export type LlmDrift = z.infer<typeof LlmDrift>;

/**
 * The token ids of one model turn, as the inference engine saw and sampled them (token in, token out).
 * An episode's turns form one growing sequence: a turn that `extendsPrevious` has as its prompt the previous
 * turn's prompt + completion + `appendedPromptIds` (the tool result's turn, rendered through the chat template
 * once), so no earlier token is ever re-tokenised and the prompt is not repeated in the record. The loss mask is
 * implied: completion ids are the model's (1), prompt ids template, tool or environment tokens (0); see
 * `llmTrainingSamples`.
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
  /**
   * Set when this turn's conversation re-sent earlier turns whose tokens differ from what was sampled (a harness
   * behind the gateway that rewrote or re-rendered history, or retried a turn): the prompt does not start with the
   * previous turn's prompt + completion, so it is recorded whole (`extendsPrevious: false`) and the prefix rule
   * starts a new sample here instead of training on drifted tokens. Absent on records that did not drift, and on
   * records older than it (an optional property of a closed model: a BACKWARD-compatible addition).
   */
  drift: LlmDrift.optional(),
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
  /** Assistant text that came with the tool call, if any; a reply whose opening was given (`TurnRequest.replyPrefix`, its tokens the end of `tokens.appendedPromptIds`) includes it. */
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

/**
 * One training sample of an episode's model turns, as the common trainers take one (prime-rl/verifiers'
 * names, verl's `response_*`): a prompt, and everything after it with a mask over the model's own tokens.
 */
export interface LlmTrainingSample {
  /** Position among the episode's samples: 0, 1, ... */
  readonly sampleIndex: number;
  /** The first turn's whole prompt. */
  readonly promptIds: number[];
  /** Everything after the prompt, in order: each completion, and the template and tool tokens appended between them. */
  readonly completionIds: number[];
  /** 1 for a token the model sampled, 0 for template, tool and environment tokens (one per completion id). */
  readonly completionMask: number[];
  /** The engine's logprob of each sampled token; 0 where the mask is 0. */
  readonly completionLogprobs: number[];
  /** The policy version that sampled each token; -1 where the mask is 0 or the turn recorded no version. */
  readonly completionPolicyVersions: number[];
  /** The policy version of each model turn in the sample (null where the record has none). */
  readonly turnPolicyVersions: Array<number | null>;
  /** The step index of each model turn in the sample. */
  readonly stepIndices: number[];
  /** True when the sample's last reply was cut off at its token limit (finish reason `length`). */
  readonly truncated: boolean;
}

type MutableSample = { -readonly [K in keyof LlmTrainingSample]: LlmTrainingSample[K] };

/**
 * An episode's model turns as training samples, by the prefix rule: one sample while each turn's prompt is
 * the previous prompt + completion + what the turn appended (`extendsPrevious`, and the lengths agree), a new
 * sample where a prompt does not. Nothing is re-tokenised: the ids are the engine's. Steps without token ids
 * are skipped; a turn that claims to extend a sequence whose start is not recorded starts no sample (its
 * prompt is unknown), and the turns after it join none until a whole prompt comes again.
 */
export function llmTrainingSamples(steps: readonly Pick<Step, 'index' | 'llm'>[]): LlmTrainingSample[] {
  const samples: MutableSample[] = [];
  let current: MutableSample | null = null;
  /** Tokens in the current sample's sequence so far: prompt and completion. */
  let length = 0;
  for (const { index, llm } of steps) {
    const tokens = llm?.tokens;
    if (!llm || !tokens) continue;
    const version = llm.policyVersion;
    const extendsCurrent = current !== null && tokens.extendsPrevious && !tokens.drift && length + tokens.appendedPromptIds.length === tokens.promptLength;
    if (!extendsCurrent) {
      if (tokens.appendedPromptIds.length !== tokens.promptLength) {
        current = null;
        continue;
      }
      current = { sampleIndex: samples.length, promptIds: [...tokens.appendedPromptIds], completionIds: [], completionMask: [], completionLogprobs: [], completionPolicyVersions: [], turnPolicyVersions: [], stepIndices: [], truncated: false };
      samples.push(current);
      length = tokens.promptLength;
    } else {
      current!.completionIds.push(...tokens.appendedPromptIds);
      current!.completionMask.push(...tokens.appendedPromptIds.map(() => 0));
      current!.completionLogprobs.push(...tokens.appendedPromptIds.map(() => 0));
      current!.completionPolicyVersions.push(...tokens.appendedPromptIds.map(() => -1));
    }
    const sample = current!;
    sample.completionIds.push(...tokens.completionIds);
    sample.completionMask.push(...tokens.completionIds.map(() => 1));
    sample.completionLogprobs.push(...tokens.completionIds.map((_, i) => llm.logprobs?.[i] ?? 0));
    sample.completionPolicyVersions.push(...tokens.completionIds.map(() => version ?? -1));
    sample.turnPolicyVersions.push(version);
    sample.stepIndices.push(index);
    sample.truncated = llm.finishReason === 'length';
    length = tokens.promptLength + tokens.completionIds.length;
  }
  return samples;
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
