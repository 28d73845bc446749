import type { AnalyticsCatalog } from './catalog.js';

/**
 * The named queries a finished run is summarised with, each over one run's rows (`$run_id`, bound by DuckDB: the
 * run id is never spliced into the text).
 */
export const RUN_SUMMARY_QUERIES = {
  byPolicyVersion: `SELECT t.policy_version, count(*) AS n, avg(CASE WHEN v.passed THEN 1 ELSE 0 END) AS pass_rate, avg(v.score) AS mean_reward
    FROM trajectories t JOIN verifications v USING (trajectory_id)
    WHERE t.run_id = $run_id GROUP BY 1 ORDER BY 1`,
  trajectories: 'SELECT count(*) FROM trajectories WHERE run_id = $run_id',
  verifications: 'SELECT count(*) FROM verifications WHERE run_id = $run_id',
  rewards: 'SELECT count(*) FROM rewards WHERE run_id = $run_id',
  checkpoints: 'SELECT count(*) FROM checkpoints WHERE run_id = $run_id',
  passRate: 'SELECT avg(CASE WHEN passed THEN 1 ELSE 0 END) FROM verifications WHERE run_id = $run_id',
  meanReward: 'SELECT avg(score) FROM verifications WHERE run_id = $run_id',
  rewardDispositions: "SELECT coalesce(disposition, 'learn'), count(*) FROM rewards WHERE run_id = $run_id GROUP BY 1 ORDER BY 1",
  outcomes: 'SELECT outcome, count(*) FROM trajectories WHERE run_id = $run_id GROUP BY 1 ORDER BY 1',
  sandboxMs: 'SELECT sum(sandbox_ms) FROM trajectories WHERE run_id = $run_id',
  verificationMs: 'SELECT sum(duration_ms) FROM verifications WHERE run_id = $run_id',
} as const;

/** What one run landed in the analytics store. */
export interface RunSummary {
  /** Rows per table: trajectories, verifications, rewards, checkpoints. */
  readonly rows: { readonly trajectories: number; readonly verifications: number; readonly rewards: number; readonly checkpoints: number };
  readonly passRate: number;
  readonly meanReward: number;
  readonly byPolicyVersion: Array<{ policyVersion: number; trajectories: number; passRate: number; meanReward: number }>;
  readonly rewardDispositions: Record<string, number>;
  readonly outcomes: Record<string, number>;
  /** Sandbox time of the run's episodes and verifications, in seconds. */
  readonly sandboxSeconds: number;
}

/** The run's rows in the store, summarised by RUN_SUMMARY_QUERIES. */
export async function summarizeRun(catalog: AnalyticsCatalog, runId: string): Promise<RunSummary> {
  const params = { run_id: runId };
  const query = (name: keyof typeof RUN_SUMMARY_QUERIES) => catalog.query(RUN_SUMMARY_QUERIES[name], params);
  const scalar = async (name: keyof typeof RUN_SUMMARY_QUERIES): Promise<number> => Number((await query(name)).rows[0]?.[0] ?? 0);
  const counts = async (name: keyof typeof RUN_SUMMARY_QUERIES): Promise<Record<string, number>> => Object.fromEntries((await query(name)).rows.map(([key, n]) => [String(key), Number(n)]));
  return {
    rows: { trajectories: await scalar('trajectories'), verifications: await scalar('verifications'), rewards: await scalar('rewards'), checkpoints: await scalar('checkpoints') },
    passRate: await scalar('passRate'),
    meanReward: await scalar('meanReward'),
    byPolicyVersion: (await query('byPolicyVersion')).rows.map(([version, n, rate, reward]) => ({ policyVersion: Number(version), trajectories: Number(n), passRate: Number(rate), meanReward: Number(reward) })),
    rewardDispositions: await counts('rewardDispositions'),
    outcomes: await counts('outcomes'),
    sandboxSeconds: (await scalar('sandboxMs')) / 1000 + (await scalar('verificationMs')) / 1000,
  };
}
