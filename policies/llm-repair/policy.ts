import type { ChatClient, ChatMessage, ToolCallRequest } from '../../connectors/llm/index.js';
import { REPAIR_TOOL_SPECS, type RepairObservation } from '../../envs/index.js';
import type { Action, Policy } from '../types.js';

export const LLM_REPAIR_POLICY = 'llm-repair';

export interface LlmRepairPolicyOptions {
  client: ChatClient;
  /** @default DEFAULT_SYSTEM_PROMPT */
  systemPrompt?: string;
  /** Replies without a tool call that are answered with a reminder before the episode is submitted. @default 2 */
  maxNudges?: number;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You repair a Python module so that its tests pass. Work only through the tools: run the visible tests, ' +
  'read the module, list candidate edits and apply one, or write the file yourself; re-run the tests; ' +
  'submit when they pass. Hidden tests will check your fix, so fix the bug rather than the tests. Call exactly one tool per reply.';

/**
 * An LLM agent over the environment's tools (OpenAI function calling). One actor per episode keeps the
 * transcript; every reply's model, token counts, latency, retries and logprobs go into the trajectory.
 */
export class LlmRepairPolicy implements Policy<RepairObservation> {
  readonly policyId = LLM_REPAIR_POLICY;
  readonly version = 0;

  constructor(private readonly options: LlmRepairPolicyOptions) {
    if ((options.maxNudges ?? 2) < 0) throw new Error('LlmRepairPolicyOptions.maxNudges must be >= 0');
  }

  startEpisode(): Policy<RepairObservation> {
    return new LlmEpisode(this.options);
  }

  act(): Promise<Action> {
    throw new Error('LlmRepairPolicy keeps a transcript per episode: call startEpisode() and act on the actor');
  }
}

class LlmEpisode implements Policy<RepairObservation> {
  readonly policyId = LLM_REPAIR_POLICY;
  readonly version = 0;
  private readonly messages: ChatMessage[] = [];
  /** Tool calls of the last reply still owed an answer: the first was executed, the rest were not. */
  private owed: ToolCallRequest[] = [];
  private nudges = 0;

  constructor(private readonly options: LlmRepairPolicyOptions) {}

  async act(observation: RepairObservation, _random: () => number, signal?: AbortSignal): Promise<Action> {
    if (this.messages.length === 0) {
      this.messages.push(
        { role: 'system', content: this.options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
        { role: 'user', content: `${observation.description}\n\nThe module is ${observation.modulePath}; the visible tests are in the workspace. You have ${observation.maxTurns} tool calls.` },
      );
    }
    const [executed, ...skipped] = this.owed;
    if (executed) this.messages.push({ role: 'tool', toolCallId: executed.id, content: observation.lastResult?.output ?? '' });
    for (const call of skipped) this.messages.push({ role: 'tool', toolCallId: call.id, content: 'not executed: one tool call per reply' });
    this.owed = [];

    for (;;) {
      const reply = await this.options.client.complete(this.messages, REPAIR_TOOL_SPECS, signal);
      this.messages.push({ role: 'assistant', content: reply.content, toolCalls: reply.toolCalls });
      const llm = {
        model: reply.model,
        content: reply.content,
        finishReason: reply.finishReason,
        promptTokens: reply.promptTokens,
        completionTokens: reply.completionTokens,
        logprobs: reply.logprobs ? [...reply.logprobs] : null,
        latencyMs: reply.latencyMs,
        attempts: reply.attempts,
      };
      const [call] = reply.toolCalls;
      if (call) {
        this.owed = [...reply.toolCalls];
        return { action: { name: call.name, arguments: parseArguments(call.arguments) }, decision: null, llm };
      }
      if (this.nudges >= (this.options.maxNudges ?? 2)) return { action: { name: 'submit', arguments: {} }, decision: null, llm };
      this.nudges++;
      this.messages.push({ role: 'user', content: 'Reply with exactly one tool call.' });
    }
  }
}

/** Arguments the model wrote; unparseable JSON is passed on as-is so the env reports the mistake to the model. */
function parseArguments(raw: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(raw || '{}');
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { _invalid: raw };
  } catch {
    return { _invalid: raw };
  }
}
