import { AGENT_COMMAND } from './agent-command/index.js';
import { PROGRAM_REPAIR } from './program-repair/index.js';
import type { EnvDeps, Environment } from './types.js';
import { EnvRegistry } from './types.js';
import { SINGLE_TURN } from './single-turn/index.js';
import { WORKSPACE } from './workspace/index.js';

export * from './tools.js';
export * from './types.js';
export * from './program-repair/index.js';
export * from './workspace/index.js';
export * from './single-turn/index.js';
export * from './agent-command/index.js';

/** Every environment trialrun runs, listed here and nowhere else (a new one is added to this list). */
export const ENVIRONMENTS = new EnvRegistry([PROGRAM_REPAIR, WORKSPACE, SINGLE_TURN, AGENT_COMMAND]);

/** An environment of the registered id. */
export const makeEnv = (id: string, deps: EnvDeps): Environment<unknown> => ENVIRONMENTS.make(id, deps);
