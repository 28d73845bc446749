import { ANALYTICS_TABLES, compactStore } from '../../connectors/analytics/index.js';
import { ConfigError, isS3Url } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { existingDir, listOption, requiredInt } from '../options.js';
import { dataDirHelp, lakeLocation } from '../paths.js';

const MiB = 1024 * 1024;

export const compactCommand: Command = {
  name: 'compact',
  summary:
    'Merge the analytics store\'s small Parquet files (per run, hour and topic partition) into bigger ones. Safe while the sink runs:\n' +
    'only ranges the sink has landed are touched, and readers never see a row twice or miss one.',
  usage: '',
  options: {
    table: { type: 'string', multiple: true },
    'small-file-mb': { type: 'string', default: '64' },
    'target-file-mb': { type: 'string', default: '256' },
    'dry-run': { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
  },
  help: {
    table: 'compact only this table (repeatable; default: all)',
    'small-file-mb': 'files smaller than this are merged',
    'target-file-mb': 'a merged file stops taking inputs at about this size',
    'dry-run': 'report what would be merged, change nothing',
    'data-dir': dataDirHelp(),
  },
  async run(values) {
    const tables = listOption(values, 'table');
    const known = ANALYTICS_TABLES.map((spec) => spec.table as string);
    const unknown = (tables ?? []).filter((table) => !known.includes(table));
    if (unknown.length) throw new ConfigError(`--table ${unknown.join(', ')}: no such table; one of ${known.join(', ')}`);
    const options = {
      tables,
      smallFileBytes: requiredInt(values, 'small-file-mb') * MiB,
      targetFileBytes: requiredInt(values, 'target-file-mb') * MiB,
      dryRun: values['dry-run'] === true,
    };
    const location = lakeLocation(values);
    const store = isS3Url(location) ? location : existingDir(location, 'the analytics store (--data-dir)');
    process.stderr.write(`[compact] ${store}\n`);
    const reports = await compactStore(store, options);
    const mb = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
    for (const r of reports) {
      process.stdout.write(
        `${r.table.padEnd(14)} ${String(r.filesBefore).padStart(6)} -> ${String(r.filesAfter).padEnd(6)} files  (${r.inputs} merged into ${r.merged}, ${r.supersededRemoved} leftovers removed)  ${mb(r.bytesBefore)} -> ${mb(r.bytesAfter)}${values['dry-run'] ? '  [dry run]' : ''}\n`,
      );
    }
    return 0;
  },
};
