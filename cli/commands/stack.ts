import { harborModelsPython, harborPython, MAX_ENGINES, setupLogFile, stackComponents, stackDown, stackPaths, stackStatus, stackUp } from '../../stack/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { llmLearnerVenv } from '../llm-learner.js';
import { requiredInt } from '../options.js';

const log = (line: string): void => void process.stderr.write(`${line}\n`);

export const stackCommand: Command = {
  name: 'stack',
  summary:
    'Manage the local stack: Kafka (KRaft), the schema registry, the Docker engine, the sandbox images, and (with --llm) a model server.\n' +
    '  up      install what is missing, start what is not running, wait until each part answers (idempotent);\n' +
    '          --llm also the llama.cpp model server (or checks LLM_BASE_URL when set);\n' +
    '          --brokers 3 a three-broker KRaft cluster (localhost:19092-19094) instead of the single node;\n' +
    '          --engines 2 a second Docker engine on this machine (own socket, data root, exec root; images copied in);\n' +
    '          --s3 an S3 server (SeaweedFS at http://127.0.0.1:8433, bucket trialrun; or checks TRIALRUN_S3_URL when it names another);\n' +
    '          --k8s a one-node Kubernetes cluster (k3s, built from source once: tens of minutes; API server on https://127.0.0.1:6443)\n' +
    '  down    stop what `up` started (never a part you pointed at with KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DOCKER_HOST, LLM_BASE_URL)\n' +
    '  status  show each endpoint and whether it answers (the model server is optional: it does not change the exit status)\n' +
    '  python llm-learner  print the python of the LLM learner\'s virtualenv, installing it once (~5.7 GB)\n' +
    '  python harbor       print the python of the harbor package\'s virtualenv (its runner, its ATIF models), installing it once\n' +
    '  python harbor-models  the same for harbor\'s ATIF models alone (no runner dependencies: seconds to install)',
  usage: 'up|down|status|python llm-learner|python harbor|python harbor-models',
  options: { llm: { type: 'boolean', default: false }, s3: { type: 'boolean', default: false }, k8s: { type: 'boolean', default: false }, brokers: { type: 'string', default: '1' }, engines: { type: 'string', default: '1' } },
  help: {
    llm: 'up: also start the local model server (llama.cpp serving SmolLM2-135M-Instruct)',
    s3: 'up: also start the local S3 server (SeaweedFS), for s3:// locations in TRIALRUN_CHECKPOINTS, TRIALRUN_ARTIFACTS, ...',
    k8s: 'up: also start a one-node Kubernetes cluster (k3s and its containerd, the stack\'s images imported; kubeconfig at <state>/k8s/kubeconfig.yaml)',
    brokers: 'up: 1 for the single local node, 3 (up to 9) for a KRaft cluster on this machine, replication factor 3',
    engines: `up: Docker engines on this machine, 1 (the stack's own) to ${MAX_ENGINES}; engine N answers at DOCKER_HOST=unix://<state>/engines/N/docker.sock`,
  },
  async run(values, [action, ...extra]) {
    if (action === 'python') {
      const venvs: Record<string, () => Promise<string>> = {
        'llm-learner': llmLearnerVenv,
        harbor: () => harborPython(log, { logFile: setupLogFile(stackPaths().stateDir, 'harbor') }),
        'harbor-models': () => harborModelsPython(log, { logFile: setupLogFile(stackPaths().stateDir, 'harbor-models') }),
      };
      const install = extra.length === 1 ? venvs[extra[0]!] : undefined;
      if (!install) throw new ConfigError(`expected stack python ${Object.keys(venvs).join(' | ')}, got "stack ${[action, ...extra].join(' ')}"`);
      const python = await install();
      process.stdout.write(`${python}\n`);
      return 0;
    }
    if (extra.length > 0) throw new ConfigError(`expected up, down or status alone, got "${[action, ...extra].join(' ')}"`);
    if (values.s3 === true && action !== 'up') throw new ConfigError(`--s3 goes with stack up; stack ${action ?? ''} always includes the S3 server`);
    if (values.k8s === true && action !== 'up') throw new ConfigError(`--k8s goes with stack up; stack ${action ?? ''} always includes the cluster`);
    if (values.llm === true && action !== 'up') throw new ConfigError(`--llm goes with stack up; stack ${action ?? ''} always includes the model server`);
    const brokers = requiredInt(values, 'brokers', 1);
    if (brokers > 9) throw new ConfigError(`--brokers must be at most 9, got ${brokers}`);
    if (brokers !== 1 && action !== 'up') throw new ConfigError(`--brokers goes with stack up; stack ${action ?? ''} always includes the cluster`);
    const engines = requiredInt(values, 'engines', 1);
    if (engines > MAX_ENGINES) throw new ConfigError(`--engines must be at most ${MAX_ENGINES}, got ${engines}`);
    if (engines !== 1 && action !== 'up') throw new ConfigError(`--engines goes with stack up; stack ${action ?? ''} always includes the second engine`);
    if (action === 'up') {
      const started = performance.now();
      const components = stackComponents({ llm: values.llm === true, s3: values.s3 === true, k8s: values.k8s === true, brokers, engines });
      await stackUp(log, components); // one line per component
      log(`stack up in ${((performance.now() - started) / 1000).toFixed(1)}s`);
      if (brokers > 1) log(`other commands use the cluster with KAFKA_BROKERS=${components[0]!.endpoint()}`);
      for (const engine of components.filter((c) => /^docker-\d+$/.test(c.name))) log(`processes use ${engine.name} with DOCKER_HOST=${engine.endpoint()}`);
      return 0;
    }
    if (action === 'down') {
      for (const report of await stackDown(log, stackComponents({ all: true }))) log(`${report.name.padEnd(10)} ${report.result} ${report.endpoint}`);
      return 0;
    }
    if (action === 'status') {
      const required = new Set(stackComponents().map((c) => c.name));
      const status = await stackStatus(stackComponents({ all: true }));
      const width = Math.max(...status.map((part) => part.name.length)) + 1;
      for (const part of status) {
        process.stdout.write(`${part.name.padEnd(width)} ${part.up ? 'up  ' : 'down'} ${part.endpoint}${required.has(part.name) ? '' : ' (optional)'}\n`);
      }
      return status.every((part) => part.up || !required.has(part.name)) ? 0 : 1;
    }
    throw new ConfigError(`expected up, down or status, got "${action ?? ''}"`);
  },
};
