import { isIP } from 'node:net';
import type { ObservablePool, MetricsRegistry } from '../pipelines/runtime/index.js';
import { defaultRegistry } from '../pipelines/runtime/index.js';
import { ConfigError, requireOption } from '../schemas/index.js';

export const DEFAULT_DASHBOARD_PORT = 8321;

export interface DashboardOptions {
  /** The analytics store (the sink's Parquet folders) the charts read. */
  dataDir: string;
  /** Address to listen on; another address (0.0.0.0, a LAN address) shows the loop to other machines. @default '127.0.0.1' */
  host?: string;
  /** TCP port; 0 takes a free one (see Dashboard.url). @default 8321 */
  port?: number;
  /** The run whose records the page shows. @default the run whose rows landed last, followed as new runs start */
  runId?: string;
  /** How often a fresh snapshot is taken and, when it changed, pushed to the pages. @default 2000 */
  refreshMs?: number;
  /** Where the processors of this process report; `/metrics` exposes it. @default the process's defaultRegistry */
  registry?: MetricsRegistry;
  /** A sandbox pool of this process to show and expose (busy, idle, reaped). @default none */
  pool?: ObservablePool;
}

export interface ResolvedDashboardOptions {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly runId: string | null;
  readonly refreshMs: number;
  readonly registry: MetricsRegistry;
  readonly pool: ObservablePool | null;
}

const HOST_NAME = /^(?=.{1,253}$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

export function resolveDashboardOptions(options: DashboardOptions): ResolvedDashboardOptions {
  if (!options.dataDir) throw new ConfigError('DashboardOptions.dataDir is required');
  const host = options.host ?? '127.0.0.1';
  if (isIP(host) === 0 && !HOST_NAME.test(host)) throw new ConfigError(`DashboardOptions.host: "${host}" is neither an IP address nor a host name`);
  const port = options.port ?? DEFAULT_DASHBOARD_PORT;
  requireOption(Number.isSafeInteger(port) && port >= 0 && port <= 65535, 'DashboardOptions.port', 'a whole number in [0, 65535] (0: any free port)', port);
  const refreshMs = options.refreshMs ?? 2000;
  requireOption(Number.isSafeInteger(refreshMs) && refreshMs >= 100, 'DashboardOptions.refreshMs', 'a whole number of at least 100 ms', refreshMs);
  if (options.runId !== undefined && options.runId.trim() === '') throw new ConfigError('DashboardOptions.runId is empty; leave it out to follow the newest run');
  return {
    dataDir: options.dataDir,
    host,
    port,
    runId: options.runId ?? null,
    refreshMs,
    registry: options.registry ?? defaultRegistry,
    pool: options.pool ?? null,
  };
}
