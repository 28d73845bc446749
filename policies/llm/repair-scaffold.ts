import { envToolSpecs, REPAIR_TOOL_DEFS, toolSpec, type AnyEnvSpec, type CandidateEdit, type RepairObservation, type ToolSpec } from '../../envs/index.js';
import type { TemplateMessage } from '../../connectors/llm/index.js';
import { repairMove } from '../repair-script.js';
import type { Action, Policy } from '../types.js';
import type { ResolvedLlmPolicyOptions } from './options.js';
import { LLM_POLICY, LlmEpisode, LlmPolicy, resultMessage } from './policy.js';
import { oneArgumentCall } from './tool-calls.js';

/** The system prompt of the `repair-script` scaffold: the one choice the model makes, and what follows it. */
export const REPAIR_SCRIPT_INSTRUCTIONS =
  'You repair a Python module that has exactly one bug, a single-site slip. Its visible tests were run and every candidate ' +
  'single-site edit of the module was listed, each with the line it changes. Choose the edit that fixes the bug: reply with one ' +
  'JSON object, {"name": "apply_edit", "arguments": {"id": <the id of the edit>}}. The visible tests then run again; if they ' +
  'still fail, the edit is undone and you choose another.';

const APPLY_EDIT_SPEC = toolSpec(REPAIR_TOOL_DEFS.find((def) => def.name === 'apply_edit')!);

/** The environment's apply_edit, its id narrowed to the candidates given: the grammar the model's reply is sampled under. */
export function editChoiceSpec(candidates: readonly CandidateEdit[]): ToolSpec {
  const parameters = APPLY_EDIT_SPEC.parameters as { properties: { id: Record<string, unknown> } };
  return {
    ...APPLY_EDIT_SPEC,
    parameters: { ...parameters, properties: { ...parameters.properties, id: { ...parameters.properties.id, enum: candidates.map((edit) => edit.id) } } },
  };
}

/**
 * One candidate as the model reads it: the whole line before and after the edit, so that it judges code, not
 * tokens. An edit whose text is not where it says on that line (one spanning lines) is shown as the tool lists it.
 */
export function describeCandidate(edit: CandidateEdit, lines: readonly string[]): string {
  const text = lines[edit.line - 1];
  if (text !== undefined && edit.before !== '' && text.startsWith(edit.before, edit.col)) {
    const after = text.slice(0, edit.col) + edit.after + text.slice(edit.col + edit.before.length);
    return `#${edit.id} line ${edit.line} (${edit.kind}): ${text.trim()}  ->  ${after.trim()}`;
  }
  return `#${edit.id} line ${edit.line}:${edit.col} (${edit.kind}): ${edit.before || '(nothing)'} -> ${edit.after || '(nothing)'}`;
}

/** The candidate edits as the model reads them, in the tool's order. */
export function describeCandidates(observation: RepairObservation, edits: readonly CandidateEdit[]): string {
  const lines = observation.moduleSource.split('\n');
  return [`${edits.length} candidate edits of ${observation.modulePath} (id, line, kind: the line before  ->  after):`, ...edits.map((edit) => describeCandidate(edit, lines))].join('\n');
}

/**
 * A language model making the repair script's one choice (LlmPolicyOptions.scaffold 'repair-script'): the script
 * makes every other call, and the model reads each call's result before its next choice, so the episode is one
 * growing, token-exact sequence whose only sampled tokens are the model's choices.
 */
export class LlmRepairPolicy implements Policy<RepairObservation> {
  readonly policyId = LLM_POLICY;
  readonly model: LlmPolicy;

  constructor(
    options: ResolvedLlmPolicyOptions,
    readonly version: number,
  ) {
    this.model = new LlmPolicy(options, version);
  }

  startEpisode(env: AnyEnvSpec): LlmRepairEpisode {
    return new LlmRepairEpisode(this.model, env);
  }

  act(): Promise<Action> {
    throw new Error('LlmRepairPolicy keeps a transcript per episode: call startEpisode() and act on the actor');
  }
}

export class LlmRepairEpisode implements Policy<RepairObservation> {
  readonly policyId = LLM_POLICY;
  readonly version: number;
  private readonly model: LlmEpisode;
  /** What the model has not read yet: the results of the calls made since its last reply, in order. */
  private unread: string[] = [];
  /** The environment turn whose result was last taken into `unread` (an invalid reply does not step the environment). */
  private readTurn = 0;
  private opened = false;

  constructor(
    private readonly policy: LlmPolicy,
    env: AnyEnvSpec,
  ) {
    this.version = policy.version;
    this.model = new LlmEpisode(policy, { tools: envToolSpecs(env), prompt: env.prompt });
  }

  /** The conversation so far, as the chat template's input. */
  transcript(): readonly TemplateMessage[] {
    return this.model.transcript();
  }

  async act(observation: RepairObservation, random: () => number, signal?: AbortSignal): Promise<Action> {
    this.read(observation);
    const move = repairMove(observation);
    if (move.kind === 'scripted') return move.action;
    if (this.model.exhausted()) return { action: { name: 'submit', arguments: {} }, decision: null };
    const untried = `Edits not tried yet: ${move.candidates.map((edit) => `#${edit.id}`).join(', ')}.`;
    const opening = (): TemplateMessage[] => [
      { role: 'system', content: REPAIR_SCRIPT_INSTRUCTIONS },
      { role: 'user', content: [observation.description, ...this.unread].join('\n\n') },
    ];
    const followUp = this.opened ? [...this.unread, untried].join('\n\n') : null;
    const ids = move.candidates.map((edit) => edit.id);
    const { prefix, grammar } = oneArgumentCall(APPLY_EDIT_SPEC.name, 'id', ids);
    const action = await this.model.turn({ opening, followUp, tools: [editChoiceSpec(move.candidates)], grammar, replyPrefix: prefix }, random, signal);
    this.opened = true;
    this.unread = action.invalid === undefined ? [] : [`invalid reply: ${action.invalid}`];
    return action;
  }

  /** Takes the result of the call that led to `observation` into what the model reads next. */
  private read(observation: RepairObservation): void {
    if (observation.turn <= this.readTurn || observation.lastTool === null || observation.lastResult === null) return;
    this.readTurn = observation.turn;
    const { lastTool, lastResult, edits } = observation;
    const { maxToolResultChars } = this.policy.options;
    // The listing is shown with each edit's whole line; the tool's own text gives only the tokens it swaps.
    const result = lastTool === 'list_edits' && lastResult.ok && edits !== null ? { ok: true, output: describeCandidates(observation, edits) } : lastResult;
    this.unread.push(resultMessage(lastTool, result, lastTool === 'list_edits' ? Number.MAX_SAFE_INTEGER : maxToolResultChars));
  }
}
