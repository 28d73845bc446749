export { commandResult, MAX_BASH_SECONDS, MAX_WORKSPACE_FILE_BYTES, SNAPSHOT_SKIP_DIRS, WORKSPACE_ENV, WORKSPACE_TOOL_DEFS, WorkspaceEnv, type FinalWorkspace, type WorkspaceObservation, type WorkspaceTool } from './env.js';
export { WORKSPACE } from './spec.js';
