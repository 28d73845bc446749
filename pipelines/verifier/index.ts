export { plantCanaries, type Canaries } from './canary.js';
export { judge, RunnerFailure, RunnerResult, withOutput, type Judgement, type JudgeInput } from './judge.js';
export { nodeId, parseJunit, type JunitCase } from './junit.js';
export { classifyPath, screenFinalFiles, screenSteps, taskTestFiles, type RawNamedFile, type RawSymlink, type Screened } from './screening.js';
export { verifierScript, verifierScriptPath, VERDICT_SCRIPTS } from './sandbox-scripts.js';
export {
  createVerifierProcessor,
  describeFailure,
  resolveVerifierOptions,
  Verifier,
  VERIFIER_RECIPE,
  type Checked,
  type ResolvedVerifierOptions,
  type TaskAdmission,
  type TaskLookup,
  type VerifierOptions,
  type VerifierProcessorOptions,
} from './verifier.js';
export { verifierCodeDigest, verifierVersion } from './version.js';
export {
  calibrate,
  findKnownBadMutants,
  resolveCalibrationOptions,
  type CalibrationOptions,
  type CalibrationReport,
  type TaskCalibration,
  type VariantVerdict,
} from './calibration.js';
export { rescore, type RescoreOptions, type RescoreProgress, type RescoreReport } from './rescore.js';
