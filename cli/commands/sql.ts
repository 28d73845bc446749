import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import type { Command } from '../command.js';
import { formatResult, type OutputFormat } from '../format.js';
import { dataDir } from '../paths.js';

export const sqlCommand: Command = {
  name: 'sql',
  summary:
    'Run DuckDB SQL over the analytics store. Tables: trajectories, steps, verifications, rewards, checkpoints, tasks.\n' +
    'Example: trialrun sql "SELECT policy_version, avg(passed::INT) FROM verifications GROUP BY 1 ORDER BY 1"',
  usage: '<query>',
  options: {
    format: { type: 'string', default: 'table' },
    out: { type: 'string' },
    run: { type: 'string', multiple: true },
    'data-dir': { type: 'string' },
  },
  help: {
    format: 'table, csv, json (one object per line) or parquet (needs --out)',
    out: 'write the result to this file instead of stdout',
    run: 'only this loop run\'s rows in trajectories, steps, verifications, rewards and checkpoints (repeatable)',
    'data-dir': 'analytics store folder (default: $TRIALRUN_DATA_DIR or .trialrun/data)',
  },
  async run(values, positionals) {
    const query = positionals.join(' ').trim();
    if (!query) {
      process.stderr.write('trialrun sql: a query is required, e.g. trialrun sql "SELECT count(*) FROM trajectories"\n');
      return 2;
    }
    const format = values.format as string;
    if (!['table', 'csv', 'json', 'parquet'].includes(format)) {
      process.stderr.write(`trialrun sql: --format must be table, csv, json or parquet, got "${format}"\n`);
      return 2;
    }
    if (format === 'parquet' && !values.out) {
      process.stderr.write('trialrun sql: --format parquet needs --out <file.parquet>\n');
      return 2;
    }
    const catalog = await AnalyticsCatalog.open((values['data-dir'] as string | undefined) ?? dataDir(), { runIds: values.run as unknown as string[] | undefined });
    try {
      if (format === 'parquet') {
        const out = String(values.out).replaceAll("'", "''");
        await catalog.run(`COPY (${query.replace(/;\s*$/, '')}) TO '${out}' (FORMAT parquet)`);
        process.stderr.write(`wrote ${String(values.out)}\n`);
        return 0;
      }
      const text = formatResult(await catalog.query(query), format as OutputFormat);
      if (values.out) (await import('node:fs')).writeFileSync(String(values.out), `${text}\n`);
      else process.stdout.write(`${text}\n`);
      return 0;
    } catch (error) {
      process.stderr.write(`trialrun sql: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    } finally {
      catalog.close();
    }
  },
};
