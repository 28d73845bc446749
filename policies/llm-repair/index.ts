export { DEFAULT_SYSTEM_PROMPT, LLM_REPAIR_POLICY, LlmRepairPolicy, type LlmRepairPolicyOptions } from './policy.js';
