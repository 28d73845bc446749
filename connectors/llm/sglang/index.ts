/**
 * The SGLang server kind: its weight server (merged weights replaced in place). Its chat is the OpenAI client's, and
 * `server: 'auto'` takes it for an OpenAI server (no probe: the llm policy samples from it as from any OpenAI server).
 */
export { SglangWeightServer, type MergeWeights } from './weight-server.js';
