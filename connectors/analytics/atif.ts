import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../schemas/index.js';
import type { AnalyticsCatalog } from './catalog.js';

/**
 * Harbor's Agent Trajectory Interchange Format (ATIF) both ways: `exportAtif` writes one ATIF document per
 * trajectory of the analytics store, `trajectoryFromAtif` turns an ATIF document (ours or another system's) into
 * a trialrun trajectory record. The mapping, and what each way loses, is in docs/atif.md.
 */
export const ATIF_SCHEMA_VERSION = 'ATIF-v1.8';
/** The key under every `extra` that holds what trialrun keeps and ATIF has no field for. */
export const ATIF_EXTRA_KEY = 'trialrun';
/** The tool name of an imported agent step that called no tool (a plain message), so it stays a step. */
export const ATIF_NO_TOOL = 'message';

// ---------------------------------------------------------------------------------------------------------------
// The documents we write. Only the fields trialrun fills; harbor's own models are the judge (the integration test).

export interface AtifToolCall {
  tool_call_id: string;
  function_name: string;
  arguments: Record<string, unknown>;
}
export interface AtifObservationResult {
  source_call_id?: string;
  content?: string;
  extra?: Record<string, unknown>;
}
export interface AtifMetrics {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_token_ids?: number[];
  completion_token_ids?: number[];
  logprobs?: number[];
  extra?: Record<string, unknown>;
}
export interface AtifStep {
  step_id: number;
  timestamp?: string;
  source: 'system' | 'user' | 'agent';
  model_name?: string;
  message: string;
  tool_calls?: AtifToolCall[];
  observation?: { results: AtifObservationResult[] };
  metrics?: AtifMetrics;
  llm_call_count?: number;
  extra?: Record<string, unknown>;
}
export interface AtifTrajectory {
  schema_version: string;
  session_id?: string;
  trajectory_id?: string;
  agent: { name: string; version: string; model_name?: string; extra?: Record<string, unknown> };
  steps: AtifStep[];
  notes?: string;
  final_metrics?: { total_prompt_tokens?: number; total_completion_tokens?: number; total_steps?: number; extra?: Record<string, unknown> };
  extra?: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------------------
// Export: a trajectory as the analytics store holds it.

/** One step as the `trajectories.steps` column holds it (times as epoch milliseconds). */
export interface StoredStep {
  index: number;
  startedAtMs: number;
  tool: string;
  /** The tool call's arguments as JSON text. */
  arguments: string;
  ok: boolean;
  exitCode: number | null;
  truncated: boolean;
  output: string;
  observation: string;
  durationMs: number;
  sandboxMs: number;
  chosen: number | null;
  logprob: number | null;
  candidates: number | null;
}

/** One model turn as the `trajectories.llm_turns` column holds it. */
export interface StoredTurn {
  stepIndex: number;
  model: string;
  tokenizer: string | null;
  chatTemplateSha256: string | null;
  policyVersion: number | null;
  finishReason: string | null;
  promptTokens: number | null;
  appendedPromptTokens: number | null;
  completionTokens: number | null;
  extendsPrevious: boolean | null;
  latencyMs: number;
  attempts: number;
  constrained: boolean;
  invalidReply: string | null;
  temperature: number | null;
  topP: number | null;
  maxTokens: number | null;
  seed: number | null;
}

/** One training sample as the `trajectories.llm_samples` column holds it. */
export interface StoredSample {
  promptIds: number[];
  completionIds: number[];
  completionLogprobs: number[];
  stepIndices: number[];
}

/** A trajectory of the analytics store with its live verdict and reward, what `exportAtif` maps. */
export interface StoredTrajectory {
  trajectoryId: string;
  groupId: string;
  groupSize: number;
  envId: string;
  policyId: string;
  outcome: string;
  error: string | null;
  totalMs: number;
  sandboxMs: number;
  taskId: string;
  attempt: number;
  runId: string;
  /** Null for records whose producer had no policy version. */
  policyVersion: number | null;
  sandboxImageDigest: string | null;
  verifierVersion: string | null;
  createdAtMs: number;
  steps: StoredStep[];
  turns: StoredTurn[];
  samples: StoredSample[];
  verification: { passed: boolean; score: number; testsPassed: number; testsTotal: number; fractionPassed: number; failure: string | null; verifierVersion: string | null } | null;
  reward: { reward: number; advantage: number; disposition: string; groupMean: number; groupStd: number } | null;
}

/** The token ids of one model turn: its whole prompt (history included), its completion and their logprobs. */
export interface TurnTokens {
  promptIds: number[];
  completionIds: number[];
  logprobs: number[];
}

/**
 * Each model turn's whole prompt and completion, cut back out of the training samples (the store keeps a
 * turn's tokens once, in its sample): a sample's sequence is prompt + completion, and each turn after the
 * first appended `appendedPromptTokens` and then sampled `completionTokens` of it, in step order. A turn
 * that is in no sample (no token ids recorded) is absent.
 */
export function turnTokens(samples: readonly StoredSample[], turns: readonly StoredTurn[]): Map<number, TurnTokens> {
  const byStep = new Map(turns.map((turn) => [turn.stepIndex, turn]));
  const out = new Map<number, TurnTokens>();
  for (const sample of samples) {
    let at = 0;
    sample.stepIndices.forEach((stepIndex, k) => {
      const turn = byStep.get(stepIndex);
      if (!turn) throw new ConfigError(`sample of step ${stepIndex} has no model turn in the store`);
      if (k > 0) at += turn.appendedPromptTokens ?? 0;
      const completion = turn.completionTokens ?? 0;
      out.set(stepIndex, {
        promptIds: [...sample.promptIds, ...sample.completionIds.slice(0, at)],
        completionIds: sample.completionIds.slice(at, at + completion),
        logprobs: sample.completionLogprobs.slice(at, at + completion),
      });
      at += completion;
    });
  }
  return out;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The ATIF document of one stored trajectory. */
export function atifOfStored(t: StoredTrajectory): AtifTrajectory {
  const tokens = turnTokens(t.samples, t.turns);
  const turns = new Map(t.turns.map((turn) => [turn.stepIndex, turn]));
  const steps: AtifStep[] = [];
  const first = t.steps[0];
  // The task prompt (the first observation) is what a user gave the agent; later observations are derived
  // from tool results, which ATIF keeps in each agent step's observation, so they ride in `extra`.
  steps.push({ step_id: 1, source: 'user', message: first?.observation ?? '', ...(first ? { timestamp: iso(first.startedAtMs) } : {}) });
  for (const s of t.steps) {
    const turn = turns.get(s.index);
    const ids = tokens.get(s.index);
    const callId = `call_${s.index}`;
    const metrics: AtifMetrics | undefined = turn && {
      ...(ids ? { prompt_tokens: ids.promptIds.length, completion_tokens: ids.completionIds.length } : {}),
      ...(!ids && turn.promptTokens !== null ? { prompt_tokens: turn.promptTokens } : {}),
      ...(!ids && turn.completionTokens !== null ? { completion_tokens: turn.completionTokens } : {}),
      ...(ids ? { prompt_token_ids: ids.promptIds, completion_token_ids: ids.completionIds, logprobs: ids.logprobs } : {}),
      extra: {
        [ATIF_EXTRA_KEY]: {
          finish_reason: turn.finishReason,
          latency_ms: turn.latencyMs,
          attempts: turn.attempts,
          extends_previous: turn.extendsPrevious,
          tokenizer: turn.tokenizer,
          chat_template_sha256: turn.chatTemplateSha256,
          policy_version: turn.policyVersion,
          constrained: turn.constrained,
          invalid_reply: turn.invalidReply,
          sampling: turn.maxTokens === null ? null : { temperature: turn.temperature, top_p: turn.topP, max_tokens: turn.maxTokens, seed: turn.seed },
        },
      },
    };
    steps.push({
      step_id: steps.length + 1,
      timestamp: iso(s.startedAtMs),
      source: 'agent',
      ...(turn ? { model_name: turn.model } : {}),
      // The store keeps no reply text (a reply is its tool call, and its tokens).
      message: '',
      tool_calls: [{ tool_call_id: callId, function_name: s.tool, arguments: parseArguments(s.arguments) }],
      observation: { results: [{ source_call_id: callId, content: s.output, extra: { [ATIF_EXTRA_KEY]: { ok: s.ok, exit_code: s.exitCode, truncated: s.truncated } } }] },
      ...(metrics ? { metrics } : {}),
      llm_call_count: turn ? 1 : 0,
      extra: {
        [ATIF_EXTRA_KEY]: {
          index: s.index,
          observation: s.observation,
          duration_ms: s.durationMs,
          sandbox_ms: s.sandboxMs,
          decision: s.chosen === null ? null : { chosen: s.chosen, logprob: s.logprob, candidates: s.candidates },
        },
      },
    });
  }
  const model = t.turns[0]?.model;
  const sum = (pick: (m: AtifMetrics) => number | undefined): number => steps.reduce((total, step) => total + (step.metrics ? (pick(step.metrics) ?? 0) : 0), 0);
  return {
    schema_version: ATIF_SCHEMA_VERSION,
    session_id: t.runId,
    trajectory_id: t.trajectoryId,
    agent: { name: t.policyId, version: t.policyVersion === null ? 'unversioned' : String(t.policyVersion), ...(model ? { model_name: model } : {}) },
    steps,
    final_metrics: {
      total_prompt_tokens: sum((m) => m.prompt_tokens),
      total_completion_tokens: sum((m) => m.completion_tokens),
      total_steps: steps.length,
      extra: {
        [ATIF_EXTRA_KEY]: {
          reward: t.reward && { reward: t.reward.reward, advantage: t.reward.advantage, disposition: t.reward.disposition, group_mean: t.reward.groupMean, group_std: t.reward.groupStd },
          verification: t.verification && {
            passed: t.verification.passed,
            score: t.verification.score,
            tests_passed: t.verification.testsPassed,
            tests_total: t.verification.testsTotal,
            fraction_passed: t.verification.fractionPassed,
            failure: t.verification.failure,
            verifier_version: t.verification.verifierVersion,
          },
        },
      },
    },
    extra: {
      [ATIF_EXTRA_KEY]: {
        trajectory_id: t.trajectoryId,
        group_id: t.groupId,
        group_size: t.groupSize,
        env_id: t.envId,
        task_id: t.taskId,
        attempt: t.attempt,
        run_id: t.runId,
        policy_id: t.policyId,
        policy_version: t.policyVersion,
        outcome: t.outcome,
        error: t.error,
        total_ms: t.totalMs,
        sandbox_ms: t.sandboxMs,
        sandbox_image_digest: t.sandboxImageDigest,
        verifier_version: t.verifierVersion,
        created_at: iso(t.createdAtMs),
      },
    },
  };
}

function parseArguments(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
}

/** A file name for a trajectory id (ids hold `/`): its safe characters, and a hash so two ids never share a name. */
export function atifFileName(trajectoryId: string): string {
  const safe = trajectoryId.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120);
  return `${safe}.${createHash('sha256').update(trajectoryId).digest('hex').slice(0, 8)}.json`;
}

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/** The stored trajectories of the catalog (its run filter applies), with each one's live verdict and reward. */
const STORED_SQL = `
WITH t AS (
  SELECT * FROM trajectories QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY _topic, _partition, _offset) = 1
),
v AS (
  SELECT trajectory_id, arg_min(passed, created_at) AS passed, arg_min(score, created_at) AS score, arg_min(tests_passed, created_at) AS tests_passed,
         arg_min(tests_total, created_at) AS tests_total, arg_min(fraction_passed, created_at) AS fraction_passed, arg_min(failure, created_at) AS failure,
         arg_min(verifier_version, created_at) AS verifier_version
  FROM verifications WHERE rescore_id IS NULL GROUP BY trajectory_id
),
r AS (
  SELECT trajectory_id, arg_max(reward, created_at) AS reward, arg_max(advantage, created_at) AS advantage, arg_max(disposition, created_at) AS disposition,
         arg_max(group_mean, created_at) AS group_mean, arg_max(group_std, created_at) AS group_std
  FROM rewards WHERE rescore_id IS NULL GROUP BY trajectory_id
)
SELECT t.trajectory_id, t.group_id, t.group_size, t.env_id, t.policy_id, t.outcome, t.error, t.total_ms, t.sandbox_ms, t.task_id, t.attempt, t.run_id,
       t.policy_version, t.sandbox_image_digest, t.verifier_version, epoch_ms(t.created_at) AS created_ms,
       to_json(list_transform(t.steps, s -> {'index': s.index, 'startedAtMs': epoch_ms(s.started_at), 'tool': s.tool, 'arguments': s.arguments, 'ok': s.ok,
         'exitCode': s.exit_code, 'truncated': s.truncated, 'output': s.output, 'observation': s.observation, 'durationMs': s.duration_ms,
         'sandboxMs': s.sandbox_ms, 'chosen': s.chosen, 'logprob': s.logprob, 'candidates': s.candidates})) AS steps,
       to_json(list_transform(t.llm_turns, u -> {'stepIndex': u.step_index, 'model': u.model, 'tokenizer': u.tokenizer, 'chatTemplateSha256': u.chat_template_sha256,
         'policyVersion': u.policy_version, 'finishReason': u.finish_reason, 'promptTokens': u.prompt_tokens, 'appendedPromptTokens': u.appended_prompt_tokens,
         'completionTokens': u.completion_tokens, 'extendsPrevious': u.extends_previous, 'latencyMs': u.latency_ms, 'attempts': u.attempts,
         'constrained': u.constrained, 'invalidReply': u.invalid_reply, 'temperature': u.temperature, 'topP': u.top_p, 'maxTokens': u.max_tokens, 'seed': u.seed})) AS turns,
       to_json(list_transform(coalesce(t.llm_samples, []), x -> {'promptIds': x.prompt_ids, 'completionIds': x.completion_ids,
         'completionLogprobs': x.completion_logprobs, 'stepIndices': x.step_indices})) AS samples,
       v.passed, v.score, v.tests_passed, v.tests_total, v.fraction_passed, v.failure, v.verifier_version AS verdict_version,
       r.reward, r.advantage, r.disposition, r.group_mean, r.group_std
FROM t LEFT JOIN v USING (trajectory_id) LEFT JOIN r USING (trajectory_id)
ORDER BY t.trajectory_id`;

/** The catalog's trajectories (its run filter applies) as `StoredTrajectory`s, ordered by id. */
export async function storedTrajectories(catalog: AnalyticsCatalog): Promise<StoredTrajectory[]> {
  const result = await catalog.query(STORED_SQL);
  const at = new Map(result.columns.map((name, i) => [name, i]));
  return result.rows.map((row) => {
    const get = (name: string): unknown => row[at.get(name)!];
    const steps = (JSON.parse(String(get('steps'))) as StoredStep[]).map((s) => ({ ...s, startedAtMs: Number(s.startedAtMs) }));
    return {
      trajectoryId: String(get('trajectory_id')),
      groupId: String(get('group_id')),
      groupSize: Number(get('group_size')),
      envId: String(get('env_id')),
      policyId: String(get('policy_id')),
      outcome: String(get('outcome')),
      error: (get('error') as string | null) ?? null,
      totalMs: Number(get('total_ms')),
      sandboxMs: Number(get('sandbox_ms')),
      taskId: String(get('task_id')),
      attempt: Number(get('attempt')),
      runId: String(get('run_id')),
      policyVersion: num(get('policy_version')),
      sandboxImageDigest: (get('sandbox_image_digest') as string | null) ?? null,
      verifierVersion: (get('verifier_version') as string | null) ?? null,
      createdAtMs: Number(get('created_ms')),
      steps,
      turns: JSON.parse(String(get('turns'))) as StoredTurn[],
      samples: JSON.parse(String(get('samples'))) as StoredSample[],
      verification:
        get('passed') === null
          ? null
          : {
              passed: Boolean(get('passed')),
              score: Number(get('score')),
              testsPassed: Number(get('tests_passed')),
              testsTotal: Number(get('tests_total')),
              fractionPassed: Number(get('fraction_passed')),
              failure: (get('failure') as string | null) ?? null,
              verifierVersion: (get('verdict_version') as string | null) ?? null,
            },
      reward:
        get('reward') === null
          ? null
          : { reward: Number(get('reward')), advantage: Number(get('advantage')), disposition: String(get('disposition')), groupMean: num(get('group_mean')) ?? 0, groupStd: num(get('group_std')) ?? 0 },
    };
  });
}

export interface AtifExportOptions {
  /** The folder to write into (made when missing); one `<trajectory>.<hash>.json` a trajectory. */
  outDir: string;
}

export interface AtifExportReport {
  readonly outDir: string;
  readonly files: readonly string[];
  readonly trajectories: number;
  readonly steps: number;
  /** Agent steps that carry token ids. */
  readonly tokenSteps: number;
}

/** Writes every trajectory of the catalog (its run filter applies) as an ATIF document; refuses an empty store. */
export async function exportAtif(catalog: AnalyticsCatalog, options: AtifExportOptions): Promise<AtifExportReport> {
  const stored = await storedTrajectories(catalog);
  if (stored.length === 0) throw new ConfigError('no trajectories to export in the analytics store (for this run)');
  mkdirSync(options.outDir, { recursive: true });
  const files: string[] = [];
  let steps = 0;
  let tokenSteps = 0;
  for (const trajectory of stored) {
    const document = atifOfStored(trajectory);
    steps += document.steps.length;
    tokenSteps += document.steps.filter((s) => s.metrics?.completion_token_ids).length;
    const file = join(options.outDir, atifFileName(trajectory.trajectoryId));
    writeFileSync(file, `${JSON.stringify(document, null, 1)}\n`);
    files.push(file);
  }
  return { outDir: options.outDir, files, trajectories: stored.length, steps, tokenSteps };
}
