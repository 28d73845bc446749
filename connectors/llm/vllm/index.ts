/**
 * The vLLM server kind: its client (the OpenAI one with token ids and per-version adapter names), its probe
 * (`/version`) and its weight server (runtime LoRA loading).
 */
export { vllmChatClient } from './client.js';
export { probeVllm } from './probe.js';
export { VllmWeightServer } from './weight-server.js';
