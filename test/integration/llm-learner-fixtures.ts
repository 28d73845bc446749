import { LlamaCppClient } from '../../connectors/llm/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type Reward, type Trajectory } from '../../schemas/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { sendRaw } from './harness.js';

/** A prompt rendered by the served model's chat template, and replies the engine sampled from it (its token ids and logprobs). */
export interface SampledTurns {
  readonly promptIds: number[];
  readonly completions: Array<{ completionIds: number[]; logprobs: number[] }>;
}

/** Samples `count` replies of at most `maxTokens` to a short prompt from the llama.cpp server at `rootUrl`, seeds 1..count. */
export async function sampleTurns(rootUrl: string, options: { count: number; maxTokens: number; content?: string }): Promise<SampledTurns> {
  const client = new LlamaCppClient({ rootUrl });
  const promptIds = await client.tokenize(await client.applyTemplate([{ role: 'user', content: options.content ?? 'Say yes or no.' }]), false);
  const completions = [];
  for (let seed = 1; seed <= options.count; seed++) {
    const { completionIds, logprobs } = await client.complete({ promptIds, sampling: { temperature: 1, topP: 1, maxTokens: options.maxTokens, seed } });
    completions.push({ completionIds, logprobs });
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
