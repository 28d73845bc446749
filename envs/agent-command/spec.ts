import type { EnvSpec } from '../types.js';
import { WORKSPACE } from '../workspace/index.js';
import { AGENT_COMMAND_ENV, AGENT_COMMAND_TOOL_DEFS, AGENT_TURN, AgentCommandEnv } from './env.js';
import type { WorkspaceObservation } from '../workspace/index.js';

/** The workspace's tasks, image and verification; the agent is a program in the sandbox, its model behind the gateway. */
export const AGENT_COMMAND: EnvSpec<WorkspaceObservation> = {
  ...WORKSPACE,
  id: AGENT_COMMAND_ENV,
  summary: 'a workspace task whose agent is a command run in its sandbox (mini-swe-agent or any harness), its model behind the gateway',
  tools: AGENT_COMMAND_TOOL_DEFS,
  agentProgram: { turnTool: AGENT_TURN },
  create: (deps) => new AgentCommandEnv(deps, WORKSPACE.defaultImage),
};
