export { llmPolicyKind, type LlmParams } from './kind.js';
export { LLM_SCAFFOLDS, LLM_SERVER_KINDS, resolveLlmPolicyOptions, type LlmPolicyOptions, type LlmScaffold, type LlmServerKind, type ResolvedLlmPolicyOptions } from './options.js';
export { INVALID_REPLY, LLM_POLICY, LlmEpisode, LlmPolicy, openingMessages, resultMessage, type TurnRequest } from './policy.js';
export { describeCandidate, describeCandidates, editChoiceSpec, LlmRepairEpisode, LlmRepairPolicy, REPAIR_SCRIPT_INSTRUCTIONS } from './repair-scaffold.js';
export { describeTools, oneArgumentCall, parseFunctionCall, parseToolCallReply, toolCallSchema, type FixedOpeningReply, type ParsedReply } from './tool-calls.js';
