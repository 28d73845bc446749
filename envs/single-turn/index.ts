export { MAX_REPLY_BYTES, replyPathOf, SINGLE_TURN_ENV, SINGLE_TURN_TOOL_DEFS, SingleTurnEnv, type SingleTurnObservation } from './env.js';
export { SINGLE_TURN } from './spec.js';
