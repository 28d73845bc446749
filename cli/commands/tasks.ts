import { join } from 'node:path';
import { catalogTopics, ensureTopics } from '../../connectors/kafka/index.js';
import { runTaskJob } from '../../pipelines/task-job/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { dataDir } from '../paths.js';

export const tasksCommand: Command = {
  name: 'tasks',
  summary:
    'Task data jobs.\n' +
    '  publish <file.jsonl>  validate rows (rejects go to a rejects file with line and reason), drop exact duplicates,\n' +
    '                        and publish the batch to the tasks topic in one transaction',
  usage: 'publish <file.jsonl>',
  options: {
    'dry-run': { type: 'boolean', default: false },
  },
  help: { 'dry-run': 'report what the job would publish, publish nothing' },
  async run(values, [action, file]) {
    if (action !== 'publish' || !file) {
      process.stderr.write('trialrun tasks: usage: trialrun tasks publish <file.jsonl> [--dry-run]\n');
      return 2;
    }
    const context = processorContext();
    if (!values['dry-run']) {
      const admin = context.kafka.admin();
      await admin.connect();
      await ensureTopics(admin, catalogTopics(context.names)).finally(() => admin.disconnect());
      await context.serde.register();
    }
    const report = await runTaskJob(context.kafka, context.serde, context.names, { file, rejectsDir: join(dataDir(), 'rejects'), dryRun: Boolean(values['dry-run']) });
    process.stdout.write(
      [
        `job run     ${report.jobRunId}`,
        `rows read   ${report.rowsRead}`,
        `rejected    ${report.rejected}`,
        `duplicates  ${report.duplicates}`,
        `valid       ${report.tasks.length}`,
        `published   ${report.published}${values['dry-run'] ? ' (dry run)' : ` to ${context.names.name('tasks')}`}`,
        `rejects     ${report.rejectsFile}`,
      ].join('\n') + '\n',
    );
    return 0;
  },
};
