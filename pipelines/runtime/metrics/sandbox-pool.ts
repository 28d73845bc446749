import { defaultRegistry, type MetricsRegistry } from './registry.js';

/** What a sandbox pool reports (AgentSandboxPool's `stats` and `reapedCount`). */
export interface ObservablePool {
  readonly stats: { readonly held: number; readonly ready: number; readonly creating: number; readonly pending: number };
  readonly reapedCount: number;
}

/**
 * Reports a sandbox pool as `trialrun_sandbox_pool_sandboxes{state="busy|idle|creating|destroying"}` and
 * `trialrun_sandbox_pool_reaped_total` (read at scrape time, under `pool` = `name`); returns the function that stops it.
 */
export function observeSandboxPool(pool: ObservablePool, name = 'default', registry: MetricsRegistry = defaultRegistry): () => void {
  const sandboxes = registry.gauge('trialrun_sandbox_pool_sandboxes', 'Sandboxes of the pool by state: busy (held by a rollout or verification), idle (warm), creating, destroying.', ['pool', 'state']);
  const reaped = registry.counter('trialrun_sandbox_pool_reaped_total', 'Sandboxes the pool\'s reaper has removed since it started (left by executors that died).', ['pool']);
  return registry.addCollector(() => {
    const { held, ready, creating, pending } = pool.stats;
    for (const [state, value] of [['busy', held], ['idle', ready], ['creating', creating], ['destroying', pending]] as const) sandboxes.set({ pool: name, state }, value);
    const labels = { pool: name };
    reaped.inc(labels, Math.max(0, pool.reapedCount - reaped.get(labels)));
  });
}
