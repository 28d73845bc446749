export { llmPolicyKind, type LlmParams } from './kind.js';
export { LLM_SERVER_KINDS, resolveLlmPolicyOptions, type LlmPolicyOptions, type LlmServerKind, type ResolvedLlmPolicyOptions } from './options.js';
export { INVALID_REPLY, LLM_POLICY, LlmEpisode, LlmPolicy, openingMessages, resultMessage } from './policy.js';
export { describeTools, parseFunctionCall, parseToolCallReply, toolCallSchema, type ParsedReply } from './tool-calls.js';
