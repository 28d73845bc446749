export * from './chat-client.js';
export {
  LlamaCppClient,
  servedModelPath,
  tokenCompletionCall,
  type LlamaCppClientOptions,
  type TokenCallContext,
  type SamplingParams,
  type ServerIdentity,
  type TemplateMessage,
  type TokenCompletion,
  type TokenCompletionRequest,
} from './llama-cpp.js';
export { servedModelName, servedVersionOf, SglangWeightServer, VllmWeightServer, WEIGHT_SERVER_KINDS, type MergeWeights, type ServedAdapter, type WeightServer, type WeightServerKind } from './weights.js';
export * from './gateway/index.js';
