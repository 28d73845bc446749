/**
 * Language-model servers, one folder per server kind (llama-cpp/, vllm/, sglang/, openai/): each holds its client,
 * its probe and its weight server. Shared here: the HTTP calls (http.ts), the WeightServer contract
 * (weight-server.ts) and the probe order (server-kinds.ts). docs/llm.md says how to add a kind.
 */
export { ChatRequestError } from './http.js';
export { servedModelName, servedVersionOf, WEIGHT_SERVER_KINDS, type ServedAdapter, type WeightServer, type WeightServerKind } from './weight-server.js';
export { CHAT_SERVER_KINDS, probeServerKind, type ChatServerKind } from './server-kinds.js';
export * from './llama-cpp/index.js';
export * from './openai/index.js';
export * from './vllm/index.js';
export * from './sglang/index.js';
export * from './gateway/index.js';
