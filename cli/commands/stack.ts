import { stackDown, stackStatus, stackUp } from '../../stack/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';

const log = (line: string): void => void process.stderr.write(`${line}\n`);

export const stackCommand: Command = {
  name: 'stack',
  summary:
    'Manage the local stack: Kafka (KRaft), the schema registry, the Docker engine and the sandbox images.\n' +
    '  up      install what is missing, start what is not running, wait until each part answers (idempotent)\n' +
    '  down    stop what `up` started (never a part you pointed at with KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DOCKER_HOST)\n' +
    '  status  show each endpoint and whether it answers',
  usage: 'up|down|status',
  options: {},
  help: {},
  async run(_values, [action, ...extra]) {
    if (extra.length > 0) throw new ConfigError(`expected up, down or status alone, got "${[action, ...extra].join(' ')}"`);
    if (action === 'up') {
      const started = performance.now();
      await stackUp(log); // one line per component
      log(`stack up in ${((performance.now() - started) / 1000).toFixed(1)}s`);
      return 0;
    }
    if (action === 'down') {
      for (const report of await stackDown(log)) log(`${report.name.padEnd(10)} ${report.result} ${report.endpoint}`);
      return 0;
    }
    if (action === 'status') {
      const status = await stackStatus();
      const width = Math.max(...status.map((part) => part.name.length)) + 1;
      for (const part of status) process.stdout.write(`${part.name.padEnd(width)} ${part.up ? 'up  ' : 'down'} ${part.endpoint}\n`);
      return status.every((part) => part.up) ? 0 : 1;
    }
    throw new ConfigError(`expected up, down or status, got "${action ?? ''}"`);
  },
};
