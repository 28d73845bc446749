import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { trajectoryFromAtif, type AtifImportOptions, type AtifSource } from '../../connectors/analytics/index.js';
import { RejectsFile } from '../../connectors/files/index.js';
import type { OutputFile } from '../../connectors/storage/index.js';
import { ConfigError, errorMessage, type Trajectory } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { stringOption } from '../options.js';
import { dataDirHelp, rejectsOutput } from '../paths.js';

/** One document to import, or why its file or line could not be read as one. */
type Read = { source: AtifSource; document: unknown } | { source: AtifSource; error: string };

/** The files named: a folder stands for its `.json` and `.jsonl` files, in name order. */
function expandFiles(paths: readonly string[]): string[] {
  return paths.flatMap((path) => {
    const absolute = resolve(path);
    let stat;
    try {
      stat = statSync(absolute);
    } catch {
      throw new ConfigError(`no such file or folder ${absolute}`);
    }
    if (!stat.isDirectory()) return [absolute];
    return readdirSync(absolute)
      .filter((name) => /\.jsonl?$/i.test(name))
      .sort()
      .map((name) => join(absolute, name));
  });
}

/** A `.jsonl` file holds a document a line; any other file is one JSON document. */
function readDocuments(file: string): Read[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return [{ source: { file }, error: `${file}: cannot read: ${errorMessage(error)}` }];
  }
  const parse = (json: string, source: AtifSource): Read => {
    try {
      return { source, document: JSON.parse(json) as unknown };
    } catch (error) {
      return { source, error: `${source.file}${source.line === undefined ? '' : `:${source.line}`}: not JSON: ${errorMessage(error)}` };
    }
  };
  if (!/\.jsonl$/i.test(file)) return [parse(text, { file })];
  return text.split('\n').flatMap((line, i) => (line.trim() === '' ? [] : [parse(line, { file, line: i + 1 })]));
}

export const importCommand: Command = {
  name: 'import',
  summary:
    'Import trajectories from other systems onto the trajectories topic, where the analytics sink lands them for SQL\n' +
    'and `verify rescore` can score them (with the final files, where the file carries them).\n' +
    '  atif <files or folders...>  Harbor\'s Agent Trajectory Interchange Format: a .json file each, or .jsonl a line each;\n' +
    '                              steps, tool calls, observations, token ids and logprobs (docs/atif.md)\n' +
    'A file that is not ATIF, or breaks it where trialrun reads it, is rejected (named with its step and field, in a\n' +
    'rejects file under TRIALRUN_REJECTS, a folder or s3://bucket/prefix, else under the data folder); the rest are\n' +
    'still imported, and the exit status is 1.\n' +
    'Example: trialrun import atif atif/ --run imported-1',
  usage: 'atif <files...>',
  options: {
    task: { type: 'string' },
    env: { type: 'string' },
    run: { type: 'string' },
    policy: { type: 'string' },
    'data-dir': { type: 'string' },
  },
  help: {
    task: 'the task id of trajectories whose file names none (extra.trialrun.task_id)',
    env: 'the environment of trajectories whose file names none (extra.trialrun.env_id)',
    run: 'the run id the trajectories land under (default: the file\'s run, else its session_id, else atif-import)',
    policy: 'the policy id of trajectories from another system (default: the file\'s, else its agent\'s name)',
    'data-dir': `where the rejects file goes unless TRIALRUN_REJECTS names a place (<data-dir>/rejects); ${dataDirHelp()}`,
  },
  async run(values, [format, ...paths]) {
    if (format !== 'atif' || paths.length === 0) throw new ConfigError(`import what? use "import atif <files...>", got "${[format, ...paths].filter(Boolean).join(' ')}"`);
    const options: AtifImportOptions = { taskId: stringOption(values, 'task'), envId: stringOption(values, 'env'), runId: stringOption(values, 'run'), policyId: stringOption(values, 'policy'), importedAt: new Date().toISOString() };
    const files = expandFiles(paths);
    if (files.length === 0) throw new ConfigError(`no .json or .jsonl files in ${paths.join(', ')}`);
    const rejectsFile = rejectsOutput(`atif-import-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`, values);
    try {
      // An s3:// rejects location that does not answer stops the import here, before a file is read.
      await rejectsFile.check();
      return await importAtif(files, options, rejectsFile);
    } finally {
      rejectsFile.close();
    }
  },
};

/** Reads and maps every file, puts what was rejected in `rejectsFile`, and sends the rest; the exit status. */
async function importAtif(files: readonly string[], options: AtifImportOptions, rejectsFile: OutputFile): Promise<number> {
  // Every file is read and mapped before a connection is made: a bad file costs nothing on the topics.
  const trajectories: Trajectory[] = [];
  const rejected: Array<{ source: AtifSource; reason: string }> = [];
  for (const file of files) {
    for (const read of readDocuments(file)) {
      if ('error' in read) {
        rejected.push({ source: read.source, reason: read.error });
        continue;
      }
      try {
        trajectories.push(trajectoryFromAtif(read.document, read.source, options));
      } catch (error) {
        rejected.push({ source: read.source, reason: errorMessage(error) });
      }
    }
  }
  let rejectsPath: string | null = null;
  if (rejected.length > 0) {
    const rejects = new RejectsFile(rejectsFile.path);
    for (const { source, reason } of rejected) {
      rejects.add({ source: source.file, row: source.line ?? 1, stage: 'validate', reason });
      process.stderr.write(`rejected ${reason}\n`);
    }
    rejects.close();
    rejectsPath = await rejectsFile.publish();
  }
  if (trajectories.length > 0) {
    const context = await processorContext(['trajectories']);
    await context.serde.register(['trajectories']);
    const producer = context.kafka.producer({ idempotent: true });
    await producer.connect();
    try {
      for (let i = 0; i < trajectories.length; i += 32) {
        const chunk = trajectories.slice(i, i + 32);
        // Keyed by task, as the rollout workers key them.
        const messages = await Promise.all(chunk.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) })));
        await producer.send({ topic: context.names.name('trajectories'), messages });
      }
    } finally {
      await producer.disconnect();
    }
  }
  const steps = trajectories.reduce((sum, t) => sum + t.steps.length, 0);
  const tokenSteps = trajectories.reduce((sum, t) => sum + t.steps.filter((s) => s.llm?.tokens).length, 0);
  const runs = [...new Set(trajectories.map((t) => t.lineage.runId))];
  process.stdout.write(
    `imported ${trajectories.length} trajectories (${steps} steps, ${tokenSteps} with token ids${runs.length ? `; runs ${runs.join(', ')}` : ''}) from ${files.length} files` +
      `${rejectsPath ? `; ${rejected.length} rejected, listed in ${rejectsPath}` : ''}\n`,
  );
  return rejected.length > 0 ? 1 : 0;
}
