import { z } from 'zod';
import { FileTree, PYTEST_REPAIR_VERIFICATION } from '../../schemas/index.js';
import type { EnvSpec } from '../types.js';
import { PROGRAM_REPAIR_ENV, ProgramRepairEnv, REPAIR_TOOL_DEFS } from './env.js';
import type { RepairObservation } from './observation.js';

/** A program-repair task: one Python module under repair and at least one visible test module. */
const RepairPayload = z.object({
  files: FileTree.refine((files) => Object.keys(files).length === 1, 'program repair needs exactly one module in files'),
  visibleTests: FileTree.refine((files) => Object.keys(files).length > 0, 'program repair needs at least one visible test module'),
});

export const PROGRAM_REPAIR: EnvSpec<RepairObservation> = {
  id: PROGRAM_REPAIR_ENV,
  summary: 'one buggy Python module, visible tests to run, candidate single-site edits to list and apply',
  tools: REPAIR_TOOL_DEFS,
  defaultImage: 'python-repair',
  taskPayload: RepairPayload,
  defaultVerification: PYTEST_REPAIR_VERIFICATION,
  prompt: {
    instructions:
      'You repair a Python module so that its tests pass. Work only through the tools: run the visible tests, ' +
      'read the module, list candidate edits and apply one, or write the file yourself; re-run the tests; ' +
      'submit when they pass. Hidden tests will check your fix, so fix the bug rather than the tests.',
    opening: (observation) => `${observation.description}\n\nThe module is ${observation.modulePath}; the visible tests are in the workspace. You have ${observation.maxTurns} tool calls.`,
  },
  create: (deps) => new ProgramRepairEnv(deps),
};
