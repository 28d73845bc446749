/** The plain OpenAI-compatible server kind (hosted APIs, SGLang, any other): the chat-completions client, and the probe that takes any server. */
export * from './client.js';
export { probeOpenAi } from './probe.js';
