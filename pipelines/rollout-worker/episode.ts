import type { AnyEnvSpec, Environment } from '../../envs/index.js';
import type { Policy } from '../../policies/index.js';
import { NO_WORKSPACE_EXTRAS, nowIso, type FileTree, type Step, type TrajectoryOutcome, type WorkspaceExtras } from '../../schemas/index.js';

export interface EpisodeResult {
  readonly steps: Step[];
  readonly finalFiles: FileTree;
  readonly finalExtras: WorkspaceExtras;
  readonly outcome: TrajectoryOutcome;
  readonly imageDigest: string | null;
  readonly totalMs: number;
  readonly sandboxMs: number;
}

/**
 * Runs one episode to its end and always releases the environment. This is the one place an episode is cut off at
 * the turn cap (`env.maxTurns`): every reply counts, valid or not, and at the cap the environment is truncated
 * (outcome 'max-turns'). Otherwise the episode ends when a step says it is done: by the agent (submitted), or by a
 * budget of the environment's own (truncated: 'max-turns').
 */
export async function runEpisode<Obs>(
  spec: AnyEnvSpec,
  env: Environment<Obs>,
  init: () => Promise<Obs>,
  policy: Policy<Obs>,
  random: () => number,
  signal: AbortSignal,
): Promise<EpisodeResult> {
  const started = performance.now();
  const steps: Step[] = [];
  // An environment whose agent is a program runs it itself: no policy acts, each step is the program's next model call.
  const program = spec.agentProgram;
  const actor = program ? policy : (policy.startEpisode?.(spec) ?? policy);
  let sandboxMs = 0;
  try {
    let observation: Obs = await init();
    sandboxMs = performance.now() - started;
    for (;;) {
      signal.throwIfAborted();
      if (steps.length >= env.maxTurns) {
        const end = await env.truncate(signal);
        sandboxMs += end.sandboxMs;
        return { steps, finalFiles: end.finalFiles, finalExtras: end.finalExtras ?? NO_WORKSPACE_EXTRAS, outcome: 'max-turns', imageDigest: env.imageDigest, totalMs: performance.now() - started, sandboxMs };
      }
      const stepStarted = performance.now();
      const startedAt = nowIso();
      const { action, decision, llm, invalid } = program ? { action: { name: program.turnTool, arguments: {} }, decision: null, llm: undefined, invalid: undefined } : await actor.act(observation, random, signal);
      if (invalid !== undefined) {
        // An invalid reply is a failed turn of its own: recorded, never given to the environment, counted against the cap.
        steps.push({ index: steps.length, observation: env.describe(observation), toolCall: action, toolResult: { ok: false, output: invalid, truncated: false, exitCode: null }, decision, llm: llm ?? null, startedAt, durationMs: performance.now() - stepStarted, sandboxMs: 0 });
        continue;
      }
      const transition = await env.step(action, signal);
      sandboxMs += transition.sandboxMs;
      steps.push({
        index: steps.length,
        observation: env.describe(observation),
        toolCall: action,
        toolResult: transition.result,
        decision,
        llm: transition.llm ?? llm ?? null,
        startedAt,
        durationMs: performance.now() - stepStarted,
        sandboxMs: transition.sandboxMs,
      });
      observation = transition.observation;
      if (transition.done) {
        return {
          steps,
          finalFiles: transition.finalFiles ?? {},
          finalExtras: transition.finalExtras ?? NO_WORKSPACE_EXTRAS,
          outcome: transition.truncated ? 'max-turns' : 'submitted',
          imageDigest: env.imageDigest,
          totalMs: performance.now() - started,
          sandboxMs,
        };
      }
    }
  } finally {
    await env.close();
  }
}
