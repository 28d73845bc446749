/**
 * Kafka for `trialrun stack up`: a single-node Apache Kafka 4.x in KRaft mode (one JVM is both
 * broker and controller), run from jars that Maven fetches once into the user cache.
 *
 * kafkajs 2.2.4 predates Kafka 4, which removed old protocol versions (KIP-896). It still works
 * because kafkajs uses the highest version that both sides support, and every API it calls keeps a
 * common one. Against 4.4.0 it settles on Produce v7, Fetch v11, ListOffsets v3, Metadata v6,
 * OffsetCommit v5, OffsetFetch v3, FindCoordinator v2, JoinGroup v5, SyncGroup/Heartbeat/LeaveGroup
 * v3, CreateTopics v3, DeleteTopics v1, DescribeConfigs v2, and v1 of InitProducerId,
 * AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn (so transactions follow the
 * version 1 transaction protocol: the per-transaction epoch bump of KIP-890 needs EndTxn v5, which
 * kafkajs lacks, and 4.x keeps serving older clients). test/integration/stack.test.ts exercises produce,
 * consume, and a transaction with sendOffsets against the broker started here.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBrokers } from '../connectors/kafka/index.js';
import { checkoutFile, wholeNumber } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { daemonFiles, portAccepts, runCommand, runningDaemon, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, stackPaths, type StackPaths } from './state.js';

/** The Kafka release `stack up` runs; stack/kafka/pom.xml's default `kafka.version` matches it. */
export const KAFKA_VERSION = '4.4.0';

export interface KafkaOptions {
  /** Bootstrap servers, comma-separated `host:port`. @default env KAFKA_BROKERS, else 'localhost:9092' */
  readonly brokers?: string;
  /** Only check the brokers, never start one (they are the user's). @default true when env KAFKA_BROKERS is set */
  readonly external?: boolean;
  /** @default KAFKA_VERSION */
  readonly version?: string;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Port of the KRaft controller listener. @default 9093 */
  readonly controllerPort?: number;
  /** Broker JVM heap (-Xmx). @default '768m' */
  readonly heap?: string;
  /** How long `ensure` waits for a broker it started. @default 120_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const DAEMON = 'kafka';

export function kafkaComponent(options: KafkaOptions = {}): StackComponent {
  const env = options.env ?? process.env;
  const brokers = options.brokers ?? env.KAFKA_BROKERS ?? 'localhost:9092';
  const external = options.external ?? env.KAFKA_BROKERS !== undefined;
  const version = options.version ?? KAFKA_VERSION;
  const paths = options.paths ?? stackPaths(env);
  const brokerList = brokers.split(',').map((b) => b.trim()).filter((b) => b !== '');
  const kafkaDir = join(paths.stateDir, 'kafka');
  const serverProperties = join(kafkaDir, 'server.properties');
  const { logFile } = daemonFiles(paths.stateDir, DAEMON);
  const java = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  const isUp = async (): Promise<boolean> => (await probeBrokers(brokerList)) === null;

  return {
    name: 'kafka',
    endpoint: () => brokers,
    isUp,

    async ensure(log: StackLog) {
      if (await isUp()) return 'reused';
      if (external) {
        throw new Error(`no Kafka answers at KAFKA_BROKERS=${brokers}; trialrun starts no broker when KAFKA_BROKERS is set (unset it to use the built-in one)`);
      }
      // A broker we started earlier may still be booting: wait for it instead of starting a second.
      let pid = runningDaemon(paths.stateDir, DAEMON, serverProperties);
      const [host, port] = splitHostPort(brokerList[0] ?? '');
      // Something already listens on the port (another checkout's broker, slow to answer under load): a second
      // broker would only die on "address in use", so wait for that one to answer instead.
      if (pid === undefined && (await portAccepts(host, port))) {
        log(`${host}:${port} is taken by a process this checkout did not start; waiting for it to answer as Kafka`);
        await waitUntil(isUp, { what: `Kafka at ${brokers} (the process on its port)`, timeoutMs: options.startTimeoutMs ?? 120_000 });
        return 'reused';
      }
      if (pid === undefined) {
        const libs = await fetchJars(paths.cacheDir, version, logFile, log);
        const controllerPort = options.controllerPort ?? 9093;
        writeConfig(kafkaDir, { id: 1, host, port, controllerPort, voters: `1@${host === 'localhost' ? '127.0.0.1' : host}:${controllerPort}`, replication: 1 });
        await formatOnce(kafkaDir, join(kafkaDir, 'cluster-id'), java, libs, logFile, log);
        log(`starting Kafka ${version} on ${brokers} (log: ${logFile})`);
        ({ pid } = await startDaemon(paths.stateDir, { name: DAEMON, command: java, args: brokerArgs(options.heap ?? '768m', kafkaDir, libs), env }));
      }
      await waitUntil(isUp, {
        what: `Kafka at ${brokers}`,
        timeoutMs: options.startTimeoutMs ?? 120_000,
        logFile,
        pid,
      });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external) {
        // (The single node and the cluster below keep separate state folders and ports.)
        // Controlled shutdown of a single node takes a few seconds; give it room before SIGKILL.
        if ((await stopDaemon(paths.stateDir, DAEMON, { match: serverProperties, graceMs: 30_000 })) === 'stopped') {
          log(`stopped Kafka on ${brokers}`);
          return 'stopped';
        }
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

function splitHostPort(address: string): [string, number] {
  const match = /^(.*):(\d+)$/.exec(address);
  if (!match?.[1] || !match[2]) throw new Error(`bad Kafka address '${address}': expected host:port`);
  return [match[1], Number(match[2])];
}

/**
 * Copies the broker's jars into `<cacheDir>/kafka-<version>/libs` once. Maven writes into a scratch
 * folder that is renamed into place only when complete, so an existing `libs` folder is always usable
 * and a warm `stack up` skips Maven.
 */
async function fetchJars(cacheDir: string, version: string, logFile: string, log: StackLog): Promise<string> {
  const home = ensureDir(cacheDir, `kafka-${version}`);
  const libs = join(home, 'libs');
  if (existsSync(libs)) return libs;
  const partial = join(home, 'libs.partial');
  rmSync(partial, { recursive: true, force: true });
  log(`fetching Kafka ${version} jars with Maven into ${libs} (once)`);
  await runCommand(
    'mvn',
    ['-q', '-B', '-f', checkoutFile('stack/kafka/pom.xml'), `-Dkafka.version=${version}`, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`],
    { logFile },
  );
  renameSync(partial, libs);
  return libs;
}

/** One KRaft node (broker and controller in one JVM) and the quorum it votes in. */
interface NodeConfig {
  readonly id: number;
  readonly host: string;
  readonly port: number;
  readonly controllerPort: number;
  /** `id@host:port` of every controller, this one included. */
  readonly voters: string;
  /** Replicas of internal topics and the default for new ones; min.insync.replicas is one less (at least 1). */
  readonly replication: number;
}

/** (Re)writes the broker config each start, so edits here reach existing state folders. */
function writeConfig(kafkaDir: string, node: NodeConfig): void {
  ensureDir(kafkaDir);
  const { host, port, controllerPort, replication } = node;
  // Bind to loopback only: this is a developer's local broker.
  const bind = host === 'localhost' ? '127.0.0.1' : host;
  const minIsr = Math.max(1, replication - 1);
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': node.id,
    'controller.quorum.voters': node.voters,
    listeners: `PLAINTEXT://${bind}:${port},CONTROLLER://${bind}:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${host}:${port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': join(kafkaDir, 'data'),
    'num.partitions': 1,
    // One node: every topic makes do with one replica. A cluster keeps three, and a write needs two of them,
    // so one broker can die without losing an acknowledged record or stopping writes.
    'default.replication.factor': replication,
    'min.insync.replicas': minIsr,
    'offsets.topic.replication.factor': replication,
    'transaction.state.log.replication.factor': replication,
    'transaction.state.log.min.isr': minIsr,
    'share.coordinator.state.topic.replication.factor': replication,
    'share.coordinator.state.topic.min.isr': minIsr,
    // Fewer internal partitions than the default 50 make the first consumer group and the first
    // transaction start in well under a second.
    'offsets.topic.num.partitions': 8,
    'transaction.state.log.num.partitions': 8,
    // A single local consumer should not wait 3 s for companions that never come.
    'group.initial.rebalance.delay.ms': 0,
    // Topics are declared by the pipelines, so a typo must fail rather than create a topic.
    'auto.create.topics.enable': 'false',
  };
  writeFileSync(
    join(kafkaDir, 'server.properties'),
    Object.entries(settings).map(([key, value]) => `${key}=${value}\n`).join(''),
  );
  writeFileSync(
    join(kafkaDir, 'log4j2.properties'),
    [
      'appender.out.type=Console',
      'appender.out.name=out',
      'appender.out.layout.type=PatternLayout',
      'appender.out.layout.pattern=[%d] %p %m (%c)%n',
      'rootLogger.level=INFO',
      'rootLogger.appenderRef.out.ref=out',
      // Per-partition state changes and request logs flood the log at INFO.
      'logger.state.name=state.change.logger',
      'logger.state.level=WARN',
      'logger.request.name=kafka.request.logger',
      'logger.request.level=WARN',
      '',
    ].join('\n'),
  );
}

/**
 * Formats the KRaft storage the first time only (`kafka-storage format`); the cluster id is kept in
 * `idFile` (shared by a cluster's nodes) so a re-format after deleting the data keeps the same id.
 */
async function formatOnce(kafkaDir: string, idFile: string, java: string, libs: string, logFile: string, log: StackLog): Promise<void> {
  if (existsSync(join(kafkaDir, 'data', 'meta.properties'))) return;
  if (!existsSync(idFile)) writeFileSync(idFile, `${newClusterId()}\n`);
  const clusterId = readFileSync(idFile, 'utf8').trim();
  log(`formatting Kafka storage in ${join(kafkaDir, 'data')} (cluster id ${clusterId})`);
  await runCommand(
    java,
    ['-cp', join(libs, '*'), `-Dlog4j2.configurationFile=${join(kafkaDir, 'log4j2.properties')}`, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', join(kafkaDir, 'server.properties')],
    { logFile },
  );
}

/** The broker JVM's command line for the config in `kafkaDir`. */
function brokerArgs(heap: string, kafkaDir: string, libs: string): string[] {
  return [
    `-Xmx${heap}`,
    '-Xms128m',
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${join(kafkaDir, 'log4j2.properties')}`,
    '-cp',
    join(libs, '*'),
    'kafka.Kafka',
    join(kafkaDir, 'server.properties'),
  ];
}

/** A Kafka Uuid as `kafka-storage random-uuid` prints it: 16 random bytes, base64url, never starting with '-'. */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export interface KafkaClusterOptions {
  /** Brokers in the cluster, each also a KRaft controller (a quorum of 3 survives one loss). @default 3 */
  readonly nodes?: number;
  /** Port of node 1's client listener; node n listens on basePort + n - 1. @default 19092 */
  readonly basePort?: number;
  /** Port of node 1's controller listener; node n on controllerBasePort + n - 1. @default 19192 */
  readonly controllerBasePort?: number;
  /** Heap of each broker JVM. @default '512m' */
  readonly heap?: string;
  /** @default KAFKA_VERSION */
  readonly version?: string;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** How long `ensure` waits for the cluster. @default 180_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

/** A stack component for a multi-broker cluster, plus what a fault test needs to take one node down and back. */
export interface KafkaClusterComponent extends StackComponent {
  /** Bootstrap addresses of every node. */
  readonly brokers: readonly string[];
  /** The daemon name of node `id` (1-based), whose pid file `stack/process.ts` keeps. */
  nodeDaemon(id: number): string;
  /** The pid of node `id`, when it runs. */
  nodePid(id: number): number | undefined;
}

/**
 * `trialrun stack up --brokers 3`: a KRaft cluster of `nodes` brokers on this machine, beside the single
 * node (own ports, own state under `<state>/kafka-cluster/`), replication factor 3 and min.insync.replicas 2
 * for every topic created on it. `ensure` starts whichever nodes are not running, so after a node is
 * killed it brings just that one back.
 */
export function kafkaClusterComponent(options: KafkaClusterOptions = {}): KafkaClusterComponent {
  const env = options.env ?? process.env;
  const nodes = options.nodes ?? 3;
  wholeNumber('KafkaClusterOptions.nodes', nodes, { min: 1, max: 9 });
  const basePort = options.basePort ?? 19092;
  const controllerBasePort = options.controllerBasePort ?? 19192;
  const version = options.version ?? KAFKA_VERSION;
  const paths = options.paths ?? stackPaths(env);
  const clusterDir = join(paths.stateDir, 'kafka-cluster');
  const java = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  const ids = Array.from({ length: nodes }, (_, i) => i + 1);
  const brokers = ids.map((id) => `localhost:${basePort + id - 1}`);
  const voters = ids.map((id) => `${id}@127.0.0.1:${controllerBasePort + id - 1}`).join(',');
  const nodeDir = (id: number): string => join(clusterDir, `node-${id}`);
  const nodeDaemon = (id: number): string => `kafka-cluster-${id}`;
  const nodePid = (id: number): number | undefined => runningDaemon(paths.stateDir, nodeDaemon(id), join(nodeDir(id), 'server.properties'));
  // Up means every node answers: a fault test waits for this after restarting one.
  const isUp = async (): Promise<boolean> => (await Promise.all(brokers.map((broker) => probeBrokers([broker])))).every((problem) => problem === null);

  return {
    name: 'kafka-cluster',
    brokers,
    nodeDaemon,
    nodePid,
    endpoint: () => brokers.join(','),
    isUp,

    async ensure(log: StackLog) {
      if (await isUp()) return 'reused';
      const libs = await fetchJars(paths.cacheDir, version, daemonFiles(paths.stateDir, nodeDaemon(1)).logFile, log);
      const started: Array<{ pid: number; logFile: string }> = [];
      for (const id of ids) {
        if (nodePid(id) !== undefined) continue;
        const dir = nodeDir(id);
        writeConfig(dir, { id, host: 'localhost', port: basePort + id - 1, controllerPort: controllerBasePort + id - 1, voters, replication: Math.min(3, nodes) });
        const { logFile } = daemonFiles(paths.stateDir, nodeDaemon(id));
        await formatOnce(dir, join(clusterDir, 'cluster-id'), java, libs, logFile, log);
        log(`starting Kafka ${version} node ${id} of ${nodes} on ${brokers[id - 1]} (log: ${logFile})`);
        const { pid } = await startDaemon(paths.stateDir, { name: nodeDaemon(id), command: java, args: brokerArgs(options.heap ?? '512m', dir, libs), env });
        started.push({ pid, logFile });
      }
      await waitUntil(isUp, {
        what: `the Kafka cluster at ${brokers.join(',')}`,
        timeoutMs: options.startTimeoutMs ?? 180_000,
        logFile: started[0]?.logFile ?? daemonFiles(paths.stateDir, nodeDaemon(1)).logFile,
        pid: started[0]?.pid,
      });
      return 'started';
    },

    async stop(log: StackLog) {
      let stopped = false;
      for (const id of ids) {
        if ((await stopDaemon(paths.stateDir, nodeDaemon(id), { match: join(nodeDir(id), 'server.properties'), graceMs: 30_000 })) === 'stopped') {
          log(`stopped Kafka node ${id} on ${brokers[id - 1]}`);
          stopped = true;
        }
      }
      if (stopped) return 'stopped';
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}
