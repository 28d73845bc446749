export * from './chat-client.js';
export {
  LlamaCppClient,
  type LlamaCppClientOptions,
  type SamplingParams,
  type ServerIdentity,
  type TemplateMessage,
  type TokenCompletion,
  type TokenCompletionRequest,
} from './llama-cpp.js';
