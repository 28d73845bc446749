export { isTestModule, plantCanaries, type Canaries } from './canary.js';
export { judge, RunnerFailure, RunnerResult, withOutput, type Judgement, type JudgeInput } from './judge.js';
export { nodeId, parseJunit, type JunitCase, type JunitIds } from './junit.js';
export {
  gradedIds,
  judgeGraded,
  readReward,
  VERIFICATION_KINDS,
  VerificationKindRegistry,
  type Check,
  type ExpectedIds,
  type GradedCheck,
  type GradedJudgement,
  type GradeRun,
  type KindContext,
  type KindVerdict,
  type VerificationKind,
} from './kinds/index.js';
export { checkId, decideOutputChecks, type ReadBack } from './output-checks.js';
export { resolveRewardSpec, scoreOf, type ResolvedRewardSpec, type ScoreInput } from './score.js';
export { classifyPath, screenFinalFiles, screenSteps, taskOwnPaths, taskTestFiles, type RawNamedFile, type RawSymlink, type Screened, type Unwritten } from './screening.js';
export { verifierScript, verifierScriptPath, VERDICT_SCRIPTS } from './sandbox-scripts.js';
export { describeFailure, settleAdmission, type TaskAdmission } from './admission.js';
export { resolveVerifierOptions, type ResolvedVerifierOptions, type TaskLookup, type VerifierOptions } from './options.js';
export { createVerifierProcessor, type VerifierProcessorOptions } from './processor.js';
export { GradingSandboxes, VERIFIER_RECIPE } from './sandboxes.js';
export { specOf, Verifier, type Checked } from './verifier.js';
export { verifierCodeDigest, verifierVersion } from './version.js';
