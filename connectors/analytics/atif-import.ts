import { z } from 'zod';
import { NO_WORKSPACE_EXTRAS, Trajectory, ValidationError, type LlmCall, type Step } from '../../schemas/index.js';
import { ATIF_EXTRA_KEY, ATIF_NO_TOOL } from './atif.js';

/**
 * ATIF in: the fields of a document that trialrun reads, checked as it reads them (harbor's models stay the
 * judge of what ATIF is; this names what we cannot map). Objects are loose: fields we do not read are allowed
 * and dropped (docs/atif.md lists them).
 */
const Extra = z.record(z.string(), z.unknown());
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const Content = z.union([z.string(), z.array(ContentPart)]);
const TokenIds = z.array(z.number().int().min(0));

const AtifToolCallIn = z.looseObject({
  tool_call_id: z.string(),
  function_name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
});
const AtifStepIn = z.looseObject({
  step_id: z.number().int().min(1),
  timestamp: z.string().nullish(),
  source: z.enum(['system', 'user', 'agent']),
  model_name: z.string().nullish(),
  message: Content,
  tool_calls: z.array(AtifToolCallIn).nullish(),
  observation: z
    .looseObject({ results: z.array(z.looseObject({ source_call_id: z.string().nullish(), content: Content.nullish(), extra: Extra.nullish() })) })
    .nullish(),
  metrics: z
    .looseObject({
      prompt_tokens: z.number().int().min(0).nullish(),
      completion_tokens: z.number().int().min(0).nullish(),
      prompt_token_ids: TokenIds.nullish(),
      completion_token_ids: TokenIds.nullish(),
      logprobs: z.array(z.number()).nullish(),
      extra: Extra.nullish(),
    })
    .nullish(),
  llm_call_count: z.number().int().min(0).nullish(),
  is_copied_context: z.boolean().nullish(),
  extra: Extra.nullish(),
});
type AtifStepIn = z.infer<typeof AtifStepIn>;

/** What makes a JSON document ATIF at all; a document that fails this is "not ATIF", not "bad ATIF". */
const AtifShape = z.looseObject({
  schema_version: z.string().regex(/^ATIF-v\d+\.\d+$/),
  agent: z.looseObject({}),
  steps: z.array(z.unknown()).min(1),
});
const AtifRootIn = z.looseObject({
  schema_version: z.string(),
  session_id: z.string().nullish(),
  trajectory_id: z.string().nullish(),
  agent: z.looseObject({ name: z.string(), version: z.string(), model_name: z.string().nullish() }),
  steps: z.array(z.unknown()),
  extra: Extra.nullish(),
});

/** trialrun's own fields under `extra.trialrun`, each optional: another system's file has none of them. */
const OurRoot = z.looseObject({
  trajectory_id: z.string().min(1).optional(),
  group_id: z.string().min(1).optional(),
  group_size: z.number().int().min(1).optional(),
  env_id: z.string().min(1).optional(),
  task_id: z.string().min(1).optional(),
  attempt: z.number().int().min(0).optional(),
  run_id: z.string().min(1).optional(),
  policy_id: z.string().min(1).optional(),
  policy_version: z.number().int().min(0).nullable().optional(),
  outcome: Trajectory.shape.outcome.optional(),
  error: z.string().nullable().optional(),
  total_ms: z.number().min(0).optional(),
  sandbox_ms: z.number().min(0).optional(),
  sandbox_image_digest: z.string().nullable().optional(),
  created_at: z.iso.datetime().optional(),
  /** The final workspace (path -> text), when the producer had it: what `verify rescore` scores. */
  final_files: z.record(z.string(), z.string()).optional(),
});
const OurStep = z.looseObject({
  index: z.number().int().min(0).optional(),
  observation: z.string().optional(),
  duration_ms: z.number().min(0).optional(),
  sandbox_ms: z.number().min(0).optional(),
});
const OurTurn = z.looseObject({
  finish_reason: z.string().nullable().optional(),
  latency_ms: z.number().min(0).optional(),
  attempts: z.number().int().min(1).optional(),
  extends_previous: z.boolean().nullable().optional(),
  tokenizer: z.string().nullable().optional(),
  chat_template_sha256: z.string().nullable().optional(),
  policy_version: z.number().int().min(0).nullable().optional(),
  constrained: z.boolean().optional(),
  invalid_reply: z.string().nullable().optional(),
  sampling: z.looseObject({ temperature: z.number().min(0), top_p: z.number().gt(0).max(1), max_tokens: z.number().int().min(1), seed: z.number().int().nullable() }).nullable().optional(),
});
const OurResult = z.looseObject({ ok: z.boolean().optional(), exit_code: z.number().int().nullable().optional(), truncated: z.boolean().optional() });

/** Where a document came from, for errors: the file, and its line when it was one line of a JSON Lines file. */
export interface AtifSource {
  readonly file: string;
  readonly line?: number;
}

export interface AtifImportOptions {
  /**
   * The task every imported trajectory played, when the file does not say (`extra.trialrun.task_id`); a
   * file that names none needs it.
   * @default the file's task id
   */
  taskId?: string;
  /**
   * The task's environment, when the file does not say (`extra.trialrun.env_id`).
   * @default the file's env id
   */
  envId?: string;
  /**
   * The run the imported trajectories land under (the analytics store's `run_id`).
   * @default the file's run id (`extra.trialrun.run_id`, else `session_id`), else 'atif-import'
   */
  runId?: string;
  /**
   * The policy id of trajectories from another system.
   * @default the file's (`extra.trialrun.policy_id`), else the agent's name
   */
  policyId?: string;
  /**
   * The time of steps and trajectories whose file gives none (ISO 8601); the store files rows by it.
   * @default the time of the call
   */
  importedAt?: string;
}

const where = (source: AtifSource): string => `${source.file}${source.line === undefined ? '' : `:${source.line}`}`;

/** A zod issue path as it reads in the document: `steps[2] (step_id 3).metrics.logprobs[4]`. */
function fieldPath(prefix: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => (typeof key === 'number' ? `${text}[${key}]` : `${text}${text ? '.' : ''}${String(key)}`), prefix);
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, source: AtifSource, prefix: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(`ATIF ${where(source)}`, result.error.issues.map((issue) => `${fieldPath(prefix, issue.path) || '(document)'}: ${issue.message}`));
}

const stepLabel = (i: number, step: unknown): string => {
  const id = (step as { step_id?: unknown } | null)?.step_id;
  return `steps[${i}]${typeof id === 'number' ? ` (step_id ${id})` : ''}`;
};

const textOf = (content: z.infer<typeof Content> | null | undefined): string =>
  content === null || content === undefined ? '' : typeof content === 'string' ? content : content.map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type}]`)).join('');

/** Whether a parsed JSON value is shaped like ATIF at all (a version, an agent, steps). */
export function looksLikeAtif(document: unknown): boolean {
  return AtifShape.safeParse(document).success;
}

/** `whole` starts with `prefix`. */
const startsWith = (whole: readonly number[], prefix: readonly number[]): boolean => prefix.length <= whole.length && prefix.every((id, i) => whole[i] === id);

/**
 * One ATIF document as a trialrun trajectory. Each agent step becomes one step per tool call (a step without
 * tool calls one `message` step); its model call, with token ids where the step has them, goes on the first.
 * A step's observation is trialrun's own (`extra.trialrun.observation`) when the file has it, else the
 * messages of the user and system steps just before it, else the previous step's tool output. Throws a
 * ValidationError naming the file, the step and the field; a document that is not ATIF at all says so.
 */
export function trajectoryFromAtif(document: unknown, source: AtifSource, options: AtifImportOptions = {}): Trajectory {
  if (!looksLikeAtif(document)) {
    const shape = AtifShape.safeParse(document);
    throw new ValidationError(`ATIF ${where(source)}`, [`not an ATIF trajectory (${shape.success ? '' : shape.error.issues.map((i) => `${fieldPath('', i.path) || '(document)'}: ${i.message}`).join('; ')})`]);
  }
  const root = parseOrThrow(AtifRootIn, document, source, '');
  const ours = parseOrThrow(OurRoot, root.extra?.[ATIF_EXTRA_KEY] ?? {}, source, `extra.${ATIF_EXTRA_KEY}`);
  const atifSteps = root.steps.map((step, i) => parseOrThrow(AtifStepIn, step, source, stepLabel(i, step)));
  atifSteps.forEach((step, i) => {
    if (step.step_id !== i + 1) throw new ValidationError(`ATIF ${where(source)}`, [`${stepLabel(i, step)}.step_id: expected ${i + 1} (sequential from 1), got ${step.step_id}`]);
  });

  const taskId = ours.task_id ?? options.taskId;
  if (!taskId) throw new ValidationError(`ATIF ${where(source)}`, [`extra.${ATIF_EXTRA_KEY}.task_id: the file names no task; give one with --task`]);
  const envId = ours.env_id ?? options.envId;
  if (!envId) throw new ValidationError(`ATIF ${where(source)}`, [`extra.${ATIF_EXTRA_KEY}.env_id: the file names no environment; give the task's with --env`]);
  const runId = options.runId ?? ours.run_id ?? root.session_id ?? 'atif-import';
  const trajectoryId = ours.trajectory_id ?? root.trajectory_id ?? root.session_id ?? `${runId}/${taskId}/${where(source)}`;
  const importedAt = options.importedAt ?? new Date().toISOString();

  const steps: Step[] = [];
  let pending: string[] = [];
  let previousOutput = '';
  /** The previous model turn's whole sequence (prompt + completion), to find turns that extend it. */
  let sequence: number[] | null = null;
  atifSteps.forEach((step, i) => {
    const label = stepLabel(i, step);
    if (step.source !== 'agent') {
      pending.push(textOf(step.message));
      return;
    }
    const ourStep = parseOrThrow(OurStep, step.extra?.[ATIF_EXTRA_KEY] ?? {}, source, `${label}.extra.${ATIF_EXTRA_KEY}`);
    const observation = ourStep.observation ?? (pending.length ? pending.join('\n') : previousOutput);
    pending = [];
    const metrics = step.metrics ?? null;
    const ourTurn = parseOrThrow(OurTurn, metrics?.extra?.[ATIF_EXTRA_KEY] ?? {}, source, `${label}.metrics.extra.${ATIF_EXTRA_KEY}`);
    const llm = llmCallOf(step, root.agent.model_name ?? root.agent.name, ourTurn, sequence, source, label);
    if (llm?.tokens) sequence = [...(metrics!.prompt_token_ids ?? []), ...llm.tokens.completionIds];
    else if (llm) sequence = null;
    const calls = step.tool_calls?.length ? step.tool_calls : [null];
    const results = step.observation?.results ?? [];
    calls.forEach((call, c) => {
      // A result answers the call it names; one unnamed result answers a lone call.
      const result = call ? (results.find((r) => r.source_call_id === call.tool_call_id) ?? (calls.length === 1 && results.length === 1 && !results[0]!.source_call_id ? results[0] : undefined)) : results[0];
      const ourResult = parseOrThrow(OurResult, result?.extra?.[ATIF_EXTRA_KEY] ?? {}, source, `${label}.observation.results[${result ? results.indexOf(result) : 0}].extra.${ATIF_EXTRA_KEY}`);
      const output = textOf(result?.content);
      const startedAt = step.timestamp ? isoOrThrow(step.timestamp, source, `${label}.timestamp`) : (ours.created_at ?? importedAt);
      steps.push({
        index: steps.length,
        observation: c === 0 ? observation : previousOutput,
        toolCall: call ? { name: call.function_name, arguments: call.arguments } : { name: ATIF_NO_TOOL, arguments: { message: textOf(step.message) } },
        toolResult: { ok: ourResult.ok ?? true, output, truncated: ourResult.truncated ?? false, exitCode: ourResult.exit_code ?? null },
        decision: null,
        llm: c === 0 ? llm : null,
        startedAt,
        durationMs: c === 0 ? (ourStep.duration_ms ?? 0) : 0,
        sandboxMs: c === 0 ? (ourStep.sandbox_ms ?? 0) : 0,
      });
      previousOutput = output;
    });
  });
  const createdAt = ours.created_at ?? steps[0]?.startedAt ?? importedAt;
  const trajectory = {
    trajectoryId,
    // Without the file's group, a trajectory is a group of its own: other files' episodes of the task are no GRPO group of it.
    groupId: ours.group_id ?? trajectoryId,
    groupSize: ours.group_size ?? 1,
    envId,
    policyId: options.policyId ?? ours.policy_id ?? root.agent.name,
    steps,
    finalFiles: ours.final_files ?? {},
    finalExtras: NO_WORKSPACE_EXTRAS,
    outcome: ours.outcome ?? 'submitted',
    error: ours.error ?? null,
    totalMs: ours.total_ms ?? steps.reduce((sum, s) => sum + s.durationMs, 0),
    sandboxMs: ours.sandbox_ms ?? steps.reduce((sum, s) => sum + s.sandboxMs, 0),
    lineage: {
      taskId,
      attempt: ours.attempt ?? 0,
      runId,
      // Another system's agent version is no trialrun policy version.
      policyVersion: ours.policy_version ?? null,
      sandboxImageDigest: ours.sandbox_image_digest ?? null,
      verifierVersion: null,
      createdAt,
    },
  };
  return parseOrThrow(Trajectory, trajectory, source, '(as a trialrun trajectory)');
}

function isoOrThrow(text: string, source: AtifSource, field: string): string {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new ValidationError(`ATIF ${where(source)}`, [`${field}: not an ISO 8601 time: "${text}"`]);
  return new Date(ms).toISOString();
}

/**
 * The model call of an agent step, or null for a step that made none (`llm_call_count` 0).
 * Token ids: a prompt that is the previous turn's whole sequence plus more extends it (only the addition is
 * kept, as trialrun records turns); one that is not starts anew. The file's own `extends_previous` wins where
 * it is given, so a trialrun trajectory comes back exactly as it was recorded.
 */
function llmCallOf(step: AtifStepIn, defaultModel: string, ours: z.infer<typeof OurTurn>, previous: number[] | null, source: AtifSource, label: string): LlmCall | null {
  const metrics = step.metrics ?? null;
  // ATIF 1.7: 0 is a deterministic dispatch; null means untracked, and an agent's step is a model's reply then.
  if (step.llm_call_count === 0) return null;
  const prompt = metrics?.prompt_token_ids ?? null;
  const completion = metrics?.completion_token_ids ?? null;
  const logprobs = metrics?.logprobs ?? null;
  const fail = (field: string, why: string): never => {
    throw new ValidationError(`ATIF ${where(source)}`, [`${label}.metrics.${field}: ${why}`]);
  };
  if ((prompt === null) !== (completion === null)) fail(prompt === null ? 'prompt_token_ids' : 'completion_token_ids', 'token ids need both prompt_token_ids and completion_token_ids');
  if (logprobs && completion && logprobs.length !== completion.length) fail('logprobs', `${logprobs.length} logprobs for ${completion.length} completion tokens (one each)`);
  let tokens: LlmCall['tokens'] = null;
  // A step copied from an earlier trajectory (ATIF 1.5) is context, not a sample to train on: its ids are dropped.
  if (prompt && completion && !step.is_copied_context) {
    const extendsPrevious = ours.extends_previous ?? (previous !== null && previous.length < prompt.length && startsWith(prompt, previous));
    if (extendsPrevious && (previous === null || !startsWith(prompt, previous))) fail('prompt_token_ids', 'extends_previous is true, but the prompt does not start with the previous turn\'s prompt and completion');
    tokens = { appendedPromptIds: extendsPrevious ? prompt.slice(previous!.length) : [...prompt], promptLength: prompt.length, extendsPrevious, completionIds: [...completion] };
  }
  return {
    model: step.model_name ?? defaultModel,
    content: textOf(step.message) || null,
    finishReason: ours.finish_reason ?? null,
    promptTokens: metrics?.prompt_tokens ?? prompt?.length ?? null,
    completionTokens: metrics?.completion_tokens ?? completion?.length ?? null,
    logprobs: logprobs ? [...logprobs] : null,
    latencyMs: ours.latency_ms ?? 0,
    attempts: ours.attempts ?? 1,
    tokens,
    sampling: ours.sampling ? { temperature: ours.sampling.temperature, topP: ours.sampling.top_p, maxTokens: ours.sampling.max_tokens, seed: ours.sampling.seed } : null,
    tokenizer: ours.tokenizer ?? null,
    chatTemplateSha256: ours.chat_template_sha256 ?? null,
    policyVersion: ours.policy_version ?? null,
    constrained: ours.constrained ?? false,
    invalidReply: ours.invalid_reply ?? null,
  };
}
