export { PROGRAM_REPAIR_ENV, ProgramRepairEnv, REPAIR_TOOL_DEFS, REPAIR_TOOLS, type RepairTool } from './env.js';
export { functionSpans, type CandidateEdit, type FunctionSpan, type RepairObservation } from './observation.js';
export { parsePytestOutput, type LineCounts, type TestRunSummary } from './pytest-output.js';
export { PROGRAM_REPAIR } from './spec.js';
export { EDIT_KINDS, EDIT_KINDS_FILE } from './edit-kinds.js';
