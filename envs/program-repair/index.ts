import { registerEnv } from '../types.js';
import { PROGRAM_REPAIR_ENV, ProgramRepairEnv } from './env.js';

registerEnv(PROGRAM_REPAIR_ENV, (deps) => new ProgramRepairEnv(deps));

export { PROGRAM_REPAIR_ENV, ProgramRepairEnv, REPAIR_TOOL_SPECS, REPAIR_TOOLS, type RepairTool } from './env.js';
export { functionSpans, type CandidateEdit, type FunctionSpan, type RepairObservation } from './observation.js';
export { parsePytestOutput, type TestRunSummary } from './pytest-output.js';
