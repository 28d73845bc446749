import { z } from 'zod';
import { FileTree, type VerificationSpec } from '../../schemas/index.js';
import type { EnvSpec } from '../types.js';
import { WORKSPACE_ENV, WORKSPACE_TOOL_DEFS, WorkspaceEnv, type WorkspaceObservation } from './env.js';

const DEFAULT_IMAGE = 'python-repair';
/** Paths the opening message lists; a larger tree is summarised, and the agent explores it with bash and search. */
const LISTED_FILES = 60;

/** A workspace task: a non-empty tree (its visible tests inside it), nothing in visibleTests. */
const WorkspacePayload = z.object({
  files: FileTree.refine((files) => Object.keys(files).length > 0, 'a workspace task needs at least one file'),
  visibleTests: FileTree.refine((files) => Object.keys(files).length === 0, 'a workspace task keeps its visible tests inside files; visibleTests must be empty'),
});

/** Without a spec of its own, every test pytest collects must pass (the lists stay empty: the verifier collects the ids). */
const ALL_TESTS_PASS: VerificationSpec = { check: { kind: 'tests', runner: 'pytest', failToPass: [], passToPass: [] } };

export const WORKSPACE: EnvSpec<WorkspaceObservation> = {
  id: WORKSPACE_ENV,
  summary: 'a multi-file workspace in any language the image has; bash, read_file, write_file, str_replace, search, submit',
  tools: WORKSPACE_TOOL_DEFS,
  defaultImage: DEFAULT_IMAGE,
  taskPayload: WorkspacePayload,
  defaultVerification: ALL_TESTS_PASS,
  prompt: {
    instructions:
      'You work in a sandboxed workspace (/workspace, no network) to complete the task. Use the tools: bash to ' +
      'run commands and tests, read_file and search to explore, str_replace or write_file to edit; submit when you ' +
      'are done. Hidden checks will verify your work, so solve the task rather than changing its tests.',
    opening: (observation) => {
      const listed = observation.files.slice(0, LISTED_FILES).join('\n');
      const more = observation.files.length > LISTED_FILES ? `\n... and ${observation.files.length - LISTED_FILES} more` : '';
      return `${observation.description}\n\nThe workspace holds ${observation.files.length} files:\n${listed}${more}\n\nYou have ${observation.maxTurns} tool calls.`;
    },
  },
  create: (deps) => new WorkspaceEnv(deps, DEFAULT_IMAGE),
};
