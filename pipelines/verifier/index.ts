export { nodeId, parseJunit, type JunitCase } from './junit.js';
export { createVerifierProcessor, Verifier, VERIFIER_SPEC, verifierVersion, type VerifierOptions } from './verifier.js';
