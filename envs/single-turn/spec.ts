import { z } from 'zod';
import { FileTree, PYTEST_REPAIR_VERIFICATION } from '../../schemas/index.js';
import type { EnvSpec } from '../types.js';
import { SINGLE_TURN_ENV, SINGLE_TURN_TOOL_DEFS, SingleTurnEnv, type SingleTurnObservation } from './env.js';

/** A single-turn task: `files` is the one path its reply is written to, empty; nothing visible to run. */
const SingleTurnPayload = z.object({
  files: FileTree.refine((files) => Object.keys(files).length === 1 && Object.values(files)[0] === '', 'a single-turn task has exactly one file, the path its reply is written to, with empty content'),
  visibleTests: FileTree.refine((files) => Object.keys(files).length === 0, 'a single-turn task has no visible tests'),
});

export const SINGLE_TURN: EnvSpec<SingleTurnObservation> = {
  id: SINGLE_TURN_ENV,
  summary: 'one prompt, one reply: the reply is the artifact the task checks (code, a document, an answer)',
  tools: SINGLE_TURN_TOOL_DEFS,
  defaultImage: 'python-repair',
  taskPayload: SingleTurnPayload,
  // Without a spec of its own, the reply must pass every hidden test pytest collects (the lists stay empty: the verifier collects the ids).
  defaultVerification: PYTEST_REPAIR_VERIFICATION,
  freeReply: { tool: 'answer', argument: 'text' },
  prompt: {
    // None: the task's prompt says what to reply. SmolLM2-135M answered generated expression tasks worse under an
    // instruction of ours than under its chat template's own system prompt (mean reward 0.18 against 0.28, full passes
    // 2% against 13%, 16 tasks x 4 samples each; docs/llm.md, "Single-turn tasks").
    instructions: '',
    opening: (observation) => observation.description,
  },
  create: (deps) => new SingleTurnEnv(deps),
};
