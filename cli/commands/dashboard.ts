import { DEFAULT_DASHBOARD_PORT, resolveDashboardOptions, startDashboard, type DashboardOptions } from '../../dashboard/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { intOption, stringOption, type OptionValues } from '../options.js';
import { dataDirHelp, lakeLocation } from '../paths.js';

/** The dashboard's flags, checked before anything connects; `--port 70000` is one line and exit 2. */
export function dashboardSettings(values: OptionValues): DashboardOptions {
  const port = intOption(values, 'port', 0);
  if (port !== undefined && port > 65535) throw new ConfigError(`--port must be a whole number in [0, 65535] (0: any free port), got "${String(values.port)}"`);
  const settings: DashboardOptions = { dataDir: lakeLocation(values), host: stringOption(values, 'host'), port, runId: stringOption(values, 'run') };
  try {
    resolveDashboardOptions(settings);
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(error.message.replace(/DashboardOptions\.(host|runId)/, (_, field: string) => (field === 'host' ? '--host' : '--run')));
    throw error;
  }
  return settings;
}

export const dashboardCommand: Command = {
  name: 'dashboard',
  summary:
    'Serve a live web page of the loop (records and lag per topic, tasks in flight, pass rate and reward per policy version, ' +
    'hack flags, dead letters, verifier versions, learner metrics) and a Prometheus /metrics endpoint, until Ctrl-C. ' +
    'Processor and sandbox-pool panels need the processors in the same process: use `trialrun demo --dashboard` for those.',
  usage: '',
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    run: { type: 'string' },
    'data-dir': { type: 'string' },
  },
  help: {
    host: 'address to listen on, e.g. 0.0.0.0 for every interface (default: 127.0.0.1, this machine only)',
    port: `TCP port, 0 for any free one (default: ${DEFAULT_DASHBOARD_PORT})`,
    run: 'the run to show (default: the run whose records landed last, followed as new runs start)',
    'data-dir': dataDirHelp(),
  },
  async run(values) {
    const settings = dashboardSettings(values);
    const context = await processorContext(['tasks', 'trajectories', 'verifications', 'rewards', 'policyCheckpoints', 'deadLetters']);
    const dashboard = await startDashboard(context, settings);
    process.stdout.write(`dashboard at ${dashboard.url} (metrics at ${dashboard.url}metrics); Ctrl-C stops it\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await dashboard.close();
    return 0;
  },
};
