import { randomBytes } from 'node:crypto';
import { treeBytes } from '../../connectors/artifacts/index.js';
import { limitsForWorkspace, type ExecResult, type Sandbox, type SandboxPool } from '../../connectors/sandbox/index.js';
import { errorMessage, SandboxError, type FileTree, type Task } from '../../schemas/index.js';
import { isTestModule } from './canary.js';
import { RunnerResult, type RunnerFailure } from './judge.js';
import { verifierScript } from './sandbox-scripts.js';
import { treeTestModules, type Screened } from './screening.js';

/** The sandbox recipe a verification runs in when its task names none (`Task.image`). */
export const VERIFIER_RECIPE = 'python-repair';

/** The in-sandbox executor (sandbox-images/python-repair/agent/agent.py), whose process-tree kill the runner uses. */
const EXECUTOR_MODULE = '/opt/trialrun-agent/agent.py';

/** What the trusted runner does in the sandbox: collect pytest ids, run pytest, or only write the files for another kind. */
export type RunnerMode = 'collect' | 'verify' | 'setup';

/** The pristine test modules pytest runs: visible and hidden, so a solution that breaks a visible test cannot score. */
export const testModules = (tests: FileTree): string[] => Object.keys(tests).filter(isTestModule).sort();

export interface GradingSandboxesOptions {
  readonly pool: SandboxPool;
  readonly imageFor: (recipe: string) => string;
  readonly runId: string;
}

/**
 * Fresh grading sandboxes and the trusted runner in them: what every verification kind uses to get a sandbox
 * set up with the agent's screened files and the task's pristine ones. Nothing the agent's code does there may
 * escape as an exception (a retried exception ends as a dead letter): a runner that dies, hangs or prints
 * garbage becomes a result naming how it ended.
 */
export class GradingSandboxes {
  constructor(private readonly options: GradingSandboxesOptions) {}

  /** Runs the runner once in a fresh sandbox (see `inFresh` for a sandbox lost under it). */
  async run(task: Task, agent: Screened, hiddenTests: FileTree, mode: RunnerMode, timeoutMs: number, signal: AbortSignal): Promise<{ result: RunnerResult; imageDigest: string }> {
    return this.inFresh(
      task,
      (sandbox) => this.runOnce(sandbox, task, agent, hiddenTests, mode, timeoutMs, signal),
      (failure) => RunnerResult.parse({ undumpable: false, runnerFailure: failure }),
      signal,
    );
  }

  /**
   * Runs `use` in a fresh sandbox of the task's image. A sandbox lost under the run is run once more in a fresh
   * one; lost twice in a row it becomes `lostTwice`'s result, while a sandbox that cannot be had at all is
   * infrastructure that is down, and throws (retriable).
   */
  async inFresh<T>(task: Task, use: (sandbox: Sandbox) => Promise<T>, lostTwice: (failure: RunnerFailure) => T, signal: AbortSignal): Promise<{ result: T; imageDigest: string }> {
    const losses: string[] = [];
    for (;;) {
      type Outcome = { result: T; imageDigest: string } | { lost: string; imageDigest: string };
      const outcome = await this.withSandbox<Outcome>(task.image ?? VERIFIER_RECIPE, task.taskId, treeBytes(task.files) + treeBytes(task.visibleTests) + treeBytes(task.hiddenTests), async (sandbox) => {
        try {
          return { result: await use(sandbox), imageDigest: sandbox.imageDigest };
        } catch (error) {
          if (!(error instanceof SandboxError) || signal.aborted) throw error;
          return { lost: errorMessage(error), imageDigest: sandbox.imageDigest };
        }
      }, task.limits);
      if ('result' in outcome) return outcome;
      losses.push(outcome.lost);
      if (losses.length >= 2) {
        const failure: RunnerFailure = { kind: 'sandbox-lost', exitCode: null, signal: null, evidence: `the sandbox died under the run twice in a row: ${losses.join('; then: ')}` };
        return { result: lostTwice(failure), imageDigest: outcome.imageDigest };
      }
    }
  }

  /**
   * The trusted runner in `sandbox`: writes the agent's screened files, then the task's pristine test files and
   * `hiddenTests` (which exclude what only the host reads, such as an output check's expected file), then
   * collects or runs pytest (`setup` runs nothing more).
   */
  async runOnce(sandbox: Sandbox, task: Task, agent: Screened, hiddenTests: FileTree, mode: RunnerMode, timeoutMs: number, signal: AbortSignal): Promise<RunnerResult> {
    const nonce = randomBytes(16).toString('hex');
    const taskTests = { ...treeTestModules(task), ...task.visibleTests, ...hiddenTests };
    const job = {
      nonce,
      mode,
      timeoutS: timeoutMs / 1000,
      // A conftest.py the task itself ships is pristine; only then may pytest load conftests at all.
      allowConftest: Object.keys(taskTests).some((path) => path === 'conftest.py' || path.endsWith('/conftest.py')),
      agentFiles: agent.files,
      agentEscapedFiles: agent.rawNamedFiles,
      agentSymlinks: agent.symlinks,
      ownModules: Object.keys(task.files),
      taskFiles: taskTests,
      // Setting up for another kind of check runs no pytest: no module is made strict.
      tests: mode === 'setup' ? [] : testModules(taskTests),
      executor: EXECUTOR_MODULE,
      runner: verifierScript('runner.py'),
      witness: verifierScript('witness.py'),
      strict: verifierScript('strict.py'),
    };
    const deadlineMs = timeoutMs + 20_000;
    const exec = await sandbox.exec(['python3', '-I', '-c', verifierScript('bootstrap.py')], {
      stdin: JSON.stringify(job),
      timeoutMs: deadlineMs,
      maxOutputBytes: 24 * 1024 * 1024,
      signal,
    });
    const line = exec.stdout.split('\n').find((l) => l.startsWith(nonce));
    if (line === undefined) {
      signal.throwIfAborted();
      // Out of memory is the agent's doing, and judged so; any other end without a result is described, never thrown.
      if (exec.status === 'oom') return RunnerResult.parse({ undumpable: false, oomKilled: true, output: exec.stderr });
      return RunnerResult.parse({ undumpable: false, runnerFailure: runnerEnd(exec, deadlineMs) });
    }
    try {
      return RunnerResult.parse(JSON.parse(line.slice(nonce.length)));
    } catch (error) {
      const evidence = `the verification runner printed a result that does not parse (${errorMessage(error).slice(0, 300)}); ${exec.truncated ? 'its output was cut at the size limit' : `the line is ${line.length} characters`}`;
      return RunnerResult.parse({ undumpable: false, runnerFailure: { kind: 'unreadable', exitCode: exec.exitCode, signal: null, evidence } });
    }
  }

  /** A fresh grading sandbox, sized for a workspace of `treeBytes` (the agent's final tree is about the task's). */
  async withSandbox<T>(recipe: string, taskId: string, treeBytes: number, use: (sandbox: Sandbox) => Promise<T>, requested?: Task['limits']): Promise<T> {
    const sandbox = await this.options.pool.acquire({ image: this.options.imageFor(recipe), runId: this.options.runId, taskId, limits: limitsForWorkspace(treeBytes, requested) });
    try {
      return await use(sandbox);
    } finally {
      await sandbox.release();
    }
  }
}

/** How a runner that printed no result ended: the exit status or signal, its last progress line and its stderr tail. */
function runnerEnd(exec: ExecResult, deadlineMs: number): RunnerFailure {
  const lines = exec.stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  const progress = lines.filter((l) => l.startsWith('trialrun-runner: ')).pop()?.slice('trialrun-runner: '.length);
  const last = progress === undefined ? 'before it wrote the files' : `after "${progress}"`;
  const rest = lines.filter((l) => !l.startsWith('trialrun-runner: ')).slice(-5).join(' | ').slice(-800);
  const stderr = rest ? `stderr: ${rest}` : 'its stderr held nothing else';
  if (exec.status === 'timeout') {
    return { kind: 'hung', exitCode: null, signal: null, evidence: `the verification runner gave no result within its ${deadlineMs} ms deadline (stopped, starved, or killed with the sandbox's command watcher) ${last}; ${stderr}` };
  }
  const code = exec.exitCode;
  const killedBy = code !== null && code > 128 ? code - 128 : null;
  if (killedBy !== null) {
    return { kind: 'killed', exitCode: code, signal: killedBy, evidence: `the verification runner was killed by signal ${killedBy} (exit ${code}) ${last}, with agent code running; ${stderr}` };
  }
  // Only a kill of the sandbox's process that watches each command (kill(-1) reaches it) loses the status.
  if (code === null) {
    return { kind: 'killed', exitCode: null, signal: null, evidence: `the verification runner ended with no exit status ${last}: the process that watched it in the sandbox was killed too; ${stderr}` };
  }
  return { kind: 'exited', exitCode: code, signal: null, evidence: `the verification runner exited with status ${String(code)} without a result ${last}; ${stderr}` };
}
