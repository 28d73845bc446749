import { randomUUID } from 'node:crypto';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import { createLearner, LEARNER_DEFAULTS, resolveLearner } from '../../pipelines/learner/index.js';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import { createRolloutWorkerLanes, PolicyTracker, resolveRolloutWorker, ROLLOUT_WORKER_DEFAULTS } from '../../pipelines/rollout-worker/index.js';
import { ENVIRONMENTS, PROGRAM_REPAIR_ENV } from '../../envs/index.js';
import { LINEAR_REPAIR_POLICY, policyIds, policyKindFor } from '../../policies/index.js';
import { DEFAULT_SESSION_TIMEOUT_MS, GlobalTable } from '../../pipelines/runtime/index.js';
import { createVerifierProcessor } from '../../pipelines/verifier/index.js';
import { createWeightSync } from '../../pipelines/weight-sync/index.js';
import { ConfigError, STACK_LLM_URL, TOPICS, type TopicKey } from '../../schemas/index.js';
import { imageFor, stackComponents, stackUp } from '../../stack/index.js';
import { llmServerFor } from '../stack-for.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { LLM_HELP, LLM_OPTIONS, policyChoice, requiredInt, stringOption } from '../options.js';
import { checkpointStore, checkStorageLocations, lakeLocation, treeStore } from '../paths.js';
import { llmLearnerLaunch, llmLearnerVenv, llmServerRoot, runLlmLearner, servedGguf } from '../llm-learner.js';
import { openSandboxPool, processorSandboxBackend } from '../sandbox-backend.js';
import { WEIGHT_SERVER_HELP, WEIGHT_SERVER_OPTIONS, weightServerChoice, weightServerFor } from '../weight-server.js';

const PROCESSORS = ['rollout-worker', 'verifier', 'reward', 'learner', 'llm-learner', 'analytics-sink', 'weight-sync'] as const;

/** The broker's group.min.session.timeout.ms: a shorter session is refused only when the instance joins. */
const MIN_SESSION_TIMEOUT_MS = 6000;

interface Runnable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export const runProcessorCommand: Command = {
  name: 'run',
  summary: `Run one stream processor in this process until SIGINT or SIGTERM (graceful: uncommitted work is redone after restart).\nProcessors: ${PROCESSORS.join(', ')}`,
  usage: '<processor> [-- <llm-learner flags>]',
  options: {
    instance: { type: 'string', default: '0' },
    'run-id': { type: 'string' },
    'group-size': { type: 'string', default: String(ROLLOUT_WORKER_DEFAULTS.groupSize) },
    lanes: { type: 'string', default: String(ROLLOUT_WORKER_DEFAULTS.lanes) },
    'batch-size': { type: 'string', default: String(LEARNER_DEFAULTS.batchSize) },
    'session-timeout-ms': { type: 'string', default: String(DEFAULT_SESSION_TIMEOUT_MS) },
    policy: { type: 'string', default: LINEAR_REPAIR_POLICY },
    env: { type: 'string', default: PROGRAM_REPAIR_ENV },
    gguf: { type: 'string' },
    sandbox: { type: 'string' },
    ...LLM_OPTIONS,
    ...WEIGHT_SERVER_OPTIONS,
  },
  help: {
    instance: 'instance id; keep it stable across restarts so the restarted instance fences its predecessor',
    'run-id': 'run id stamped on records (default: random)',
    'group-size': 'rollout-worker: samples per task',
    lanes: "rollout-worker: tasks rolled out at once, each lane its own group member and transactional id ('<instance>.<lane>' when more than one); the tasks topic's partitions bound the lanes of all hosts together",
    'batch-size': 'learner: samples per update',
    'session-timeout-ms': 'how long the group waits for a silent instance (one killed without stopping) before its partitions move on; at least 6000',
    policy: `rollout-worker: policy kind rolled out, ${policyIds().join(', ')} (llm brings the stack's model server up unless --llm-url or LLM_BASE_URL names another)`,
    env: `rollout-worker: the environments whose tasks it rolls out, comma-separated (${ENVIRONMENTS.ids().join(', ')}); the policy must serve each`,
    gguf: 'llm-learner: the GGUF the model server serves (default: the model_path the llama.cpp server at LLM_BASE_URL or the stack\'s reports); flags after -- go to the learner as they are (llm-learner/README.md)',
    sandbox:
      'rollout-worker and verifier: sandbox backend, docker or process (bubblewrap, for a host without a Docker engine: copy there the image root file systems that ' +
      '`trialrun sandbox rootfs` exports where Docker runs) (default: docker, whatever the policy: a verifier cannot know which policy wrote the code it runs)',
    ...LLM_HELP,
    ...WEIGHT_SERVER_HELP,
  },
  async run(values, [name, ...extra]) {
    if (!PROCESSORS.includes(name as (typeof PROCESSORS)[number]) || (extra.length > 0 && name !== 'llm-learner')) {
      throw new ConfigError(`unknown processor "${[name, ...extra].filter(Boolean).join(' ')}"; one of ${PROCESSORS.join(', ')}`);
    }
    const runId = stringOption(values, 'run-id') ?? randomUUID();
    const instanceId = stringOption(values, 'instance') ?? '0';
    // It becomes part of the transactional id and the consumer's client id.
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(instanceId)) throw new ConfigError(`--instance must be a short name of letters, digits, '.', '_' or '-', got "${instanceId}"`);
    const sessionTimeoutMs = requiredInt(values, 'session-timeout-ms', MIN_SESSION_TIMEOUT_MS);
    const groupSize = requiredInt(values, 'group-size');
    const batchSize = requiredInt(values, 'batch-size');
    const lanes = requiredInt(values, 'lanes');
    if (lanes !== 1 && name !== 'rollout-worker') throw new ConfigError(`--lanes goes with run rollout-worker, not run ${name}`);
    const policy = policyChoice(values, policyIds());
    if (name !== 'rollout-worker' && (policy.policyId !== LINEAR_REPAIR_POLICY || policy.llm)) throw new ConfigError(`--policy and its flags go with run rollout-worker, not run ${name}`);
    const envIds = (stringOption(values, 'env') ?? PROGRAM_REPAIR_ENV).split(',').map((id) => id.trim()).filter(Boolean);
    if (name !== 'rollout-worker' && (envIds.length !== 1 || envIds[0] !== PROGRAM_REPAIR_ENV)) throw new ConfigError(`--env goes with run rollout-worker, not run ${name}`);
    const weightServer = weightServerChoice(values, name === 'weight-sync');
    // A policy that does not serve an expected environment, or a stage's bad setting, stops here, before the stack or Kafka is touched.
    if (name === 'rollout-worker') policyKindFor(policy.policyId, envIds.map((id) => ENVIRONMENTS.get(id).id), { llm: policy.llm });
    const rolloutWorker = name === 'rollout-worker' ? resolveRolloutWorker({ groupSize, lanes, instanceId, llm: policy.llm }) : null;
    const learner = name === 'learner' ? resolveLearner({ batchSize, instanceId }) : null;
    if (stringOption(values, 'gguf') !== undefined && name !== 'llm-learner') throw new ConfigError(`--gguf goes with run llm-learner, not run ${name}`);
    const sandbox = processorSandboxBackend(values, name!);
    // An s3:// store that is malformed, missing or refuses these credentials stops here, before anything is consumed.
    await checkStorageLocations();
    // `topics create` makes the catalog as a whole; a processor on a prefix without it stops here.
    const context = await processorContext(Object.keys(TOPICS) as TopicKey[]);
    if (name === 'llm-learner') {
      // The Python process (llm-learner/) consumes and commits itself; this one passes signals on and its status back.
      const gguf = stringOption(values, 'gguf') ?? (await servedGguf(llmServerRoot()));
      return runLlmLearner(await llmLearnerVenv(), llmLearnerLaunch({ gguf, runId, batchSize, sessionTimeoutMs, extraArgs: extra }));
    }
    const pool = openSandboxPool(sandbox);
    const closers: Array<() => Promise<void>> = [() => pool.close()];
    let processor: Runnable;
    if (rolloutWorker) {
      await stackUp((line) => void process.stderr.write(`${line}\n`), llmServerFor(policy));
      const policies = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store: checkpointStore(), policyId: policy.policyId, settings: { llm: policy.llm } });
      closers.push(() => policies.close());
      const members = createRolloutWorkerLanes(context, { ...rolloutWorker, runId, pool, imageFor, policies, envIds, trees: treeStore(), sessionTimeoutMs });
      processor = { start: async () => void (await Promise.all(members.map((lane) => lane.start()))), stop: async () => void (await Promise.all(members.map((lane) => lane.stop()))) };
    } else if (name === 'verifier') {
      const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
      closers.push(() => tasks.close());
      processor = createVerifierProcessor(context, { runId, pool, imageFor, tasks, instanceId, sessionTimeoutMs, trees: treeStore() });
    } else if (name === 'reward') {
      processor = createRewardProcessor(context, { sessionTimeoutMs, instanceId });
    } else if (name === 'weight-sync') {
      // The stack's own llama.cpp server is brought up first: weight sync restarts it with each version.
      if (weightServer!.kind === 'llama.cpp' && weightServer!.url === STACK_LLM_URL) await stackUp((line) => void process.stderr.write(`${line}\n`), stackComponents({ llm: true }).slice(-1));
      processor = createWeightSync(context, { server: weightServerFor(weightServer!), store: checkpointStore(), sessionTimeoutMs, instanceId, onServed: (version, ms) => process.stderr.write(`[weight-sync] serving v${version} (${(ms / 1000).toFixed(1)} s after it was published)\n`) });
    } else if (learner) {
      processor = createLearner(context, { ...learner, runId, store: checkpointStore(), sessionTimeoutMs });
    } else {
      process.stderr.write(`[${name}] landing Parquet files in ${lakeLocation()}\n`);
      processor = new AnalyticsSink(context, { dataDir: lakeLocation(), sessionTimeoutMs });
    }
    await processor.start();
    process.stderr.write(`[${name}] running (instance ${instanceId}); stop with Ctrl-C\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    process.stderr.write(`[${name}] stopping\n`);
    await processor.stop();
    for (const close of closers.reverse()) await close();
    return 0;
  },
};
