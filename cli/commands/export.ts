import { resolve } from 'node:path';
import { AnalyticsCatalog, exportAtif, exportTrainingSamples, SAMPLE_EXPORT_FORMATS } from '../../connectors/analytics/index.js';
import { ConfigError, RewardDisposition } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { choiceOption, listOption, outputFile, stringOption } from '../options.js';
import { dataDirHelp, lakeLocation } from '../paths.js';

export const exportCommand: Command = {
  name: 'export',
  summary:
    'Export the LLM training samples of the analytics store (the training_samples view: prompt_ids, completion_ids,\n' +
    'completion_mask, completion_logprobs, advantage, reward, policy versions, trajectory and group ids; docs/llm.md).\n' +
    'Example: trialrun export samples --format parquet --out samples.parquet --disposition learn\n' +
    'Or a run\'s trajectories in Harbor\'s Agent Trajectory Interchange Format, one JSON file each (steps, tool calls,\n' +
    'observations, token ids and logprobs of LLM turns, reward and verdict; docs/atif.md):\n' +
    'Example: trialrun export atif --run <id> --out atif/',
  usage: '<samples | atif>',
  options: {
    format: { type: 'string', default: 'parquet' },
    out: { type: 'string' },
    run: { type: 'string', multiple: true },
    disposition: { type: 'string', multiple: true },
    'data-dir': { type: 'string' },
  },
  help: {
    format: `samples: ${SAMPLE_EXPORT_FORMATS.join(' or ')} (one sample an object a line)`,
    out: 'samples: the file to write (required); atif: the folder to write into (default: atif-<run>)',
    run: 'only this loop run\'s samples or trajectories (repeatable; default for samples: every run; atif needs at least one)',
    disposition: `only samples whose reward is ${RewardDisposition.options.join(', ')} (repeatable; default: all, the advantage is 0 unless learn)`,
    'data-dir': dataDirHelp(),
  },
  async run(values, positionals) {
    if (positionals.length === 1 && positionals[0] === 'atif') return exportAtifFiles(values);
    if (positionals.length !== 1 || positionals[0] !== 'samples') throw new ConfigError(`export what? use "export samples" or "export atif", got "${positionals.join(' ')}"`);
    const format = choiceOption(values, 'format', SAMPLE_EXPORT_FORMATS);
    const outOption = stringOption(values, 'out');
    if (outOption === undefined) throw new ConfigError(`--out <file> is required, e.g. --out samples.${format}`);
    const out = outputFile(outOption, '--out');
    const dispositions = listOption(values, 'disposition');
    const unknown = (dispositions ?? []).filter((d) => !(RewardDisposition.options as readonly string[]).includes(d));
    if (unknown.length) throw new ConfigError(`--disposition must be one of ${RewardDisposition.options.join(', ')}, got "${unknown.join('", "')}"`);
    const store = lakeLocation(values);
    const runIds = listOption(values, 'run');
    const catalog = await AnalyticsCatalog.open(store, { runIds, requireData: true });
    try {
      const report = await exportTrainingSamples(catalog, { out, format, dispositions: dispositions as RewardDisposition[] | undefined });
      process.stdout.write(`wrote ${report.samples} samples of ${report.trajectories} trajectories to ${out} from ${store}${runIds ? ` (runs ${runIds.join(', ')})` : ''}\n`);
      return 0;
    } finally {
      catalog.close();
    }
  },
};

/** `export atif --run <id> [--out <dir>]`: one ATIF file per trajectory of the run(s). */
async function exportAtifFiles(values: Parameters<Command['run']>[0]): Promise<number> {
  const runIds = listOption(values, 'run');
  if (!runIds) throw new ConfigError('export atif needs --run <id> (see trialrun sql "SELECT DISTINCT run_id FROM trajectories")');
  if (values.disposition !== undefined) throw new ConfigError('--disposition is for export samples; export atif writes every trajectory of the run');
  const outOption = stringOption(values, 'out');
  const outDir = resolve(outOption ?? `atif-${runIds.join('+').replace(/[^A-Za-z0-9._-]+/g, '_')}`);
  const store = lakeLocation(values);
  const catalog = await AnalyticsCatalog.open(store, { runIds, requireData: true });
  try {
    const report = await exportAtif(catalog, { outDir });
    process.stdout.write(`wrote ${report.trajectories} ATIF trajectories (${report.steps} steps, ${report.tokenSteps} with token ids) to ${outDir} from ${store} (runs ${runIds.join(', ')})\n`);
    return 0;
  } finally {
    catalog.close();
  }
}
