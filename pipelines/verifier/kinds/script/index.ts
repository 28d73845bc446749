import { randomBytes } from 'node:crypto';
import { AGENT_OUTPUT_BOUNDS, parseJsonBounded, SandboxError, type ScriptVerification, type TestResult } from '../../../../schemas/index.js';
import { commandEnd, gradedKind, missingResult, readBack, type GradeRun } from '../graded.js';

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The reward a script wrote: reward.txt (one number) first, else reward.json (`reward` key); in [0, 1]. */
export function readReward(files: NonNullable<GradeRun['rewardFiles']>): { reward: number; from: string } | { problem: string } {
  const { txt, json } = files;
  if (txt !== undefined) {
    if ('problem' in txt) return txt;
    const text = txt.text.trim();
    if (!NUMBER.test(text)) return { problem: `reward.txt holds ${JSON.stringify(text.slice(0, 80))}, not one number` };
    const reward = Number(text);
    return reward >= 0 && reward <= 1 ? { reward, from: 'reward.txt' } : { problem: `reward.txt holds ${reward}, outside [0, 1]` };
  }
  if (json !== undefined) {
    if ('problem' in json) return json;
    const parsed = parseJsonBounded(json.text, AGENT_OUTPUT_BOUNDS);
    if ('problem' in parsed) return { problem: `reward.json is not JSON we read (${parsed.problem}): ${JSON.stringify(json.text.slice(0, 80))}` };
    const { value } = parsed;
    const reward = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>).reward : undefined;
    if (typeof reward !== 'number' || !Number.isFinite(reward)) return { problem: `reward.json has no numeric "reward" key: ${JSON.stringify(json.text.slice(0, 80))}` };
    return reward >= 0 && reward <= 1 ? { reward, from: 'reward.json' } : { problem: `reward.json's reward is ${reward}, outside [0, 1]` };
  }
  return { problem: 'the verifier script wrote neither reward.txt nor reward.json into $TRIALRUN_REWARD_DIR' };
}

/** `script`: the Harbor reward-file contract; the script's reward is the fraction, and passes at `passThreshold`. */
export const SCRIPT_KIND = gradedKind<ScriptVerification>({
  name: 'script',
  owns: (check): check is ScriptVerification => check.kind === 'script',
  ids: () => ['reward'],
  async run(sandbox, check, timeoutMs, signal) {
    // A folder with a fresh random name, made after the agent's files are written: nothing of theirs can be in it.
    const rewardDir = `/tmp/trialrun-reward-${randomBytes(12).toString('hex')}`;
    const made = await sandbox.exec(['mkdir', '-m', '0777', rewardDir], { timeoutMs: 10_000, signal });
    if (made.status !== 'exited' || made.exitCode !== 0) throw new SandboxError(`the grading sandbox could not make its reward folder: ${made.stderr.slice(-300)}`, { retriable: true });
    const exec = await sandbox.exec(check.command, { timeoutMs, maxOutputBytes: 256 * 1024, env: { TRIALRUN_REWARD_DIR: rewardDir }, signal });
    return { exec, rewardFiles: { txt: await readBack(sandbox, 'reward.txt', rewardDir), json: await readBack(sandbox, 'reward.json', rewardDir) } };
  },
  judge(check, { run, exec, ended, verdict }) {
    const threshold = check.passThreshold ?? 1;
    const read = readReward(run.rewardFiles!);
    if (ended !== null) return verdict([missingResult('reward', commandEnd(exec!))], ended, commandEnd(exec!), 0, false);
    if ('problem' in read) {
      const detail = `${read.problem}; ${commandEnd(exec!)}`;
      return verdict([missingResult('reward', detail)], 'no-report', detail, 0, false);
    }
    const passed = read.reward >= threshold;
    const entry: TestResult = { id: 'reward', outcome: passed ? 'passed' : 'failed', durationMs: exec!.durationMs, message: `reward ${read.reward} from ${read.from} (pass at ${threshold})` };
    return verdict([entry], null, null, read.reward, passed);
  },
});
