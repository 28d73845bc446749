import { writeFileSync } from 'node:fs';
import { AnalyticsCatalog, sqlString, type QueryResult } from '../../connectors/analytics/index.js';
import { ConfigError, errorMessage } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { formatResult, type OutputFormat } from '../format.js';
import { choiceOption, listOption, outputFile, stringOption } from '../options.js';
import { dataDirHelp, lakeLocation } from '../paths.js';

const FORMATS = ['table', 'csv', 'json', 'parquet'] as const;

/** DuckDB's own errors (parser, binder, catalog...) are the user's query, not a failure of ours. */
async function userQuery<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(errorMessage(error), { cause: error });
  }
}

export const sqlCommand: Command = {
  name: 'sql',
  summary:
    'Run DuckDB SQL over the analytics store. Tables: trajectories, steps, verifications, rewards, checkpoints, tasks, llm_turns, training_samples.\n' +
    'Several statements separated by ";" run in order, each result printed (table format).\n' +
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
    'data-dir': dataDirHelp(),
  },
  async run(values, positionals) {
    const query = positionals.join(' ').trim();
    if (!query) throw new ConfigError('a query is required, e.g. trialrun sql "SELECT count(*) FROM trajectories"');
    const format = choiceOption(values, 'format', FORMATS);
    const outOption = stringOption(values, 'out');
    const out = outOption === undefined ? undefined : outputFile(outOption, '--out');
    if (format === 'parquet' && !out) throw new ConfigError('--format parquet needs --out <file.parquet>');
    const store = lakeLocation(values);
    const runIds = listOption(values, 'run');
    // Refuses a missing folder, one without Parquet files and unknown run ids: an empty answer from the
    // wrong folder would look like a real one.
    const catalog = await AnalyticsCatalog.open(store, { runIds, requireData: true });
    // Said once the query has run, so an error stays the only line.
    const readFrom = (): void => void process.stderr.write(`[sql] read ${store}${runIds ? ` (runs ${runIds.join(', ')})` : ''}\n`);
    try {
      const statements = await userQuery(() => catalog.countStatements(query));
      if (statements === 0) throw new ConfigError(`no SQL statement in "${query}"`);
      // Several results fit one table listing, not one CSV, JSON Lines or Parquet file.
      if (statements > 1 && format !== 'table') throw new ConfigError(`--format ${format} takes one statement, got ${statements}; run them one by one, or use --format table`);
      if (format === 'parquet') {
        await userQuery(() => catalog.run(`COPY (${query.replace(/;\s*$/, '')}) TO ${sqlString(out!)} (FORMAT parquet)`));
        process.stderr.write(`wrote ${out}\n`);
        readFrom();
        return 0;
      }
      const results: QueryResult[] = await userQuery(() => catalog.queryAll(query));
      const text = results.map((result) => formatResult(result, format as OutputFormat)).join('\n\n');
      if (out) writeFileSync(out, `${text}\n`);
      else process.stdout.write(`${text}\n`);
      readFrom();
      return 0;
    } finally {
      catalog.close();
    }
  },
};
