import { LlamaCppClient } from '../../connectors/llm/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type Reward, type Trajectory } from '../../schemas/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { sendRaw } from './harness.js';

/** A prompt rendered by the served model's chat template, and replies to it as the model's token ids. */
export interface SampledTurns {
  readonly promptIds: number[];
  readonly completions: Array<{ completionIds: number[]; logprobs: number[] }>;
}

/**
 * Real token ids of `replies` to a short prompt, through the llama.cpp server's chat template and tokenizer
 * (each reply ends with the template's end-of-turn token, as a sampled one does). Tokenising answers at once
 * where sampling waits for a free slot of a shared server; the logprobs are a stand-in for the engine's
 * (`logprob` each, default log 0.25): the exactly-once and throughput checks need real ids, not real odds.
 */
export async function tokenizedTurns(rootUrl: string, replies: readonly string[], options: { content?: string; logprob?: number } = {}): Promise<SampledTurns> {
  const client = new LlamaCppClient({ rootUrl });
  const promptIds = await client.tokenize(await client.applyTemplate([{ role: 'user', content: options.content ?? 'Say yes or no.' }]), false);
  const completions = [];
  for (const reply of replies) {
    const completionIds = await client.tokenize(`${reply}<|im_end|>`, false);
    completions.push({ completionIds, logprobs: completionIds.map(() => options.logprob ?? Math.log(0.25)) });
  }
  return { promptIds, completions };
}

export interface LlmSamplePair {
  readonly trajectory: Trajectory;
  readonly reward: Reward;
}

/** Episode `id`: one model turn (reply `i` of `turns`, under `policyVersion`) and its reward, advantage +1 or -1 by parity. */
export function llmSamplePair(turns: SampledTurns, i: number, options: { id?: string; runId: string; policyVersion?: number }): LlmSamplePair {
  const { completionIds, logprobs } = turns.completions[i % turns.completions.length]!;
  const id = options.id ?? String(i);
  const policyVersion = options.policyVersion ?? 0;
  const lineage = { taskId: `task-${id}`, attempt: i % 2, runId: options.runId, policyVersion, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() };
  const trajectory: Trajectory = {
    trajectoryId: `t-${id}`, groupId: `g-${id}`, groupSize: 2, envId: 'program-repair/v1', policyId: 'llm',
    steps: [{
      index: 0, observation: 'o', toolCall: { name: 'submit', arguments: {} }, toolResult: { ok: true, output: '', truncated: false, exitCode: 0 }, decision: null,
      llm: {
        model: 'smollm2-135m-instruct', content: null, finishReason: 'length', promptTokens: turns.promptIds.length, completionTokens: completionIds.length, logprobs, latencyMs: 1, attempts: 1,
        tokens: { appendedPromptIds: turns.promptIds, promptLength: turns.promptIds.length, extendsPrevious: false, completionIds },
        sampling: { temperature: 1, topP: 1, maxTokens: completionIds.length, seed: i + 1 }, tokenizer: null, chatTemplateSha256: null, policyVersion, constrained: false, invalidReply: null,
      },
      startedAt: nowIso(), durationMs: 1, sandboxMs: 0,
    }],
    finalFiles: {}, finalExtras: NO_WORKSPACE_EXTRAS, outcome: 'submitted', error: null, totalMs: 1, sandboxMs: 0, lineage,
  };
  const reward: Reward = {
    rewardId: `r-${id}`, trajectoryId: `t-${id}`, verificationId: `v-${id}`, groupId: trajectory.groupId, reward: i % 2, advantage: i % 2 ? 1 : -1,
    groupMean: 0.5, groupStd: 0.5, groupSize: 2, disposition: 'learn', lineage,
  };
  return { trajectory, reward };
}

/** Produces the trajectories, then their rewards, through the registry serde as the processors write them. */
export async function sendPairs(context: ProcessorContext, pairs: readonly LlmSamplePair[]): Promise<void> {
  await sendRaw(context, 'trajectories', await Promise.all(pairs.map(async (p) => ({ key: p.trajectory.lineage.taskId, value: await context.serde.encode('trajectories', p.trajectory) }))));
  await sendRaw(context, 'rewards', await Promise.all(pairs.map(async (p) => ({ key: p.reward.trajectoryId, value: await context.serde.encode('rewards', p.reward) }))));
}
