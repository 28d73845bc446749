import { stackComponents, type StackComponent } from '../stack/index.js';
import type { PolicyChoice } from './options.js';

/** The stack a command needs for its policy: with --policy llm also the model server (started unless it is another's). */
export function stackFor(choice: PolicyChoice): StackComponent[] {
  return stackComponents(choice.llm ? { llm: true, llmUrl: choice.llm.baseUrl } : {});
}

/** Only the model server, for a command that needs no other part started (`run rollout-worker --policy llm`). */
export function llmServerFor(choice: PolicyChoice): StackComponent[] {
  return choice.llm ? stackFor(choice).slice(-1) : [];
}
