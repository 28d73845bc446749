export { isTestModule, plantCanaries, type Canaries } from './canary.js';
export { judge, RunnerFailure, RunnerResult, withOutput, type Judgement, type JudgeInput } from './judge.js';
export { nodeId, parseJunit, type JunitCase, type JunitIds } from './junit.js';
export { gradedIds, judgeGraded, readReward, type GradedCheck, type GradedJudgement, type GradeRun } from './grading.js';
export { checkId, decideOutputChecks, type ReadBack } from './output-checks.js';
export { resolveRewardSpec, scoreOf, type ResolvedRewardSpec, type ScoreInput } from './score.js';
export { classifyPath, screenFinalFiles, screenSteps, taskOwnPaths, taskTestFiles, type RawNamedFile, type RawSymlink, type Screened, type Unwritten } from './screening.js';
export { verifierScript, verifierScriptPath, VERDICT_SCRIPTS } from './sandbox-scripts.js';
export {
  createVerifierProcessor,
  describeFailure,
  resolveVerifierOptions,
  specOf,
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
