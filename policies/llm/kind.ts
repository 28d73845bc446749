import { IncompatibleAdapterError, LORA_SAFETENSORS_FORMAT, readLoraArtifact } from '../../connectors/checkpoints/index.js';
import { PROGRAM_REPAIR_ENV, type AgentObservation } from '../../envs/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { PolicyKind } from '../types.js';
import type { ResolvedLlmPolicyOptions } from './options.js';
import { LLM_POLICY, LlmPolicy } from './policy.js';
import { LlmRepairPolicy } from './repair-scaffold.js';

/** What an llm checkpoint names: the model the server serves (its weights live in the server, not here). */
export interface LlmParams {
  readonly model: string;
}

/**
 * The llm policy as a policy kind, configured with its server and sampling settings. Its weights are the
 * model server's: the in-process learner cannot train it, the Python LLM learner does (`trainable: 'external'`,
 * run by the loop as LoopOptions.externalLearner; weight sync applies each checkpoint to the server).
 */
export function llmPolicyKind(options: ResolvedLlmPolicyOptions): PolicyKind<AgentObservation, LlmParams, null> {
  return {
    policyId: LLM_POLICY,
    // As an agent it takes each episode's tools and prompt from that environment's spec; the repair script is program repair's.
    serves: options.scaffold === 'repair-script' ? [PROGRAM_REPAIR_ENV] : 'any',
    featureNames: [],
    trainable: 'external',
    // Under the repair script the model chooses again only after its last edit failed the tests and was undone.
    earlierDecisionsFailed: options.scaffold === 'repair-script',
    initial: () => ({ params: { model: options.model }, optimizer: null }),
    encodeParams: (params) => Buffer.from(JSON.stringify({ policyId: LLM_POLICY, model: params.model })),
    decodeParams: (bytes) => {
      // A trained version is a LoRA adapter (lora-safetensors/v1); the server applies it (weight sync), the
      // rollout side only needs to know it is one.
      try {
        readLoraArtifact(bytes);
        return { model: options.model };
      } catch (error) {
        if (!(error instanceof IncompatibleAdapterError)) throw error;
      }
      let parsed: { policyId?: unknown; model?: unknown };
      try {
        parsed = JSON.parse(bytes.toString('utf8')) as typeof parsed;
      } catch {
        throw new ConfigError(`an llm artifact is neither a ${LORA_SAFETENSORS_FORMAT} adapter nor JSON naming a model`);
      }
      if (parsed.policyId !== LLM_POLICY || typeof parsed.model !== 'string') throw new ConfigError(`an llm artifact needs policyId "${LLM_POLICY}" and a model name`);
      return { model: parsed.model };
    },
    encodeOptimizer: () => Buffer.from('null'),
    decodeOptimizer: () => null,
    inlineWeights: () => [],
    // A checkpoint names the model to serve; the server's settings (and its model, unless named) are this run's.
    // Greedy decoding is the server's at temperature 0.
    load: async (params, version, loadOptions) => {
      const settings = { ...options, model: params.model, ...(loadOptions?.decoding === 'greedy' ? { temperature: 0 } : {}) };
      return options.scaffold === 'repair-script' ? new LlmRepairPolicy(settings, version) : new LlmPolicy(settings, version);
    },
    update: async () => {
      throw new ConfigError('the llm policy is not trained by the learner: its weights live in the model server');
    },
  };
}
