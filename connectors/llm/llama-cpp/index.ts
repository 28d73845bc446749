/**
 * The llama.cpp server kind: its client (the native token-level API), its probe (`LlamaCppClient.probe`, `/props`)
 * and its weight server (restarts a local server with the adapter as a GGUF LoRA).
 */
export {
  LlamaCppClient,
  servedModelPath,
  tokenCompletionCall,
  type LlamaCppClientOptions,
  type SamplingParams,
  type ServerIdentity,
  type TemplateMessage,
  type TokenCallContext,
  type TokenCompletion,
  type TokenCompletionRequest,
} from './client.js';
export { probeLlamaCpp } from './probe.js';
export { LlamaCppWeightServer, type LlamaCppLaunch, type LlamaCppWeightServerOptions, type LocalLlamaCppServer } from './weight-server.js';
