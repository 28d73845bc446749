import { appendFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { errorMessage, STACK_LLM_URL } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { dockerComponent } from './docker.js';
import { extraEngineComponents } from './engines.js';
import { imagesComponent, resolveImageTag } from './images.js';
import { k8sComponent } from './k8s.js';
import { kafkaClusterComponent, kafkaComponent } from './kafka.js';
import { llmComponent } from './llm.js';
import { registryComponent } from './registry.js';
import { s3Component } from './s3.js';
import { ensureDir, setupLogFile, stackPaths } from './state.js';

export type { StackComponent, StackLog } from './component.js';
export { ensureTaskImage, extractImageWorkdir, resolveImageTag, taskImagePlan, type TaskImageBuildOptions, type TaskImagePlan } from './images.js';
export { enginePaths, extraEngineComponent, extraEngineComponents, MAX_ENGINES, type ExtraEngineOptions } from './engines.js';
export { importImages, K3S_MODULE_VERSION, k8sComponent, k8sPaths, kubectl, podProcesses, type K8sOptions, type K8sPaths } from './k8s.js';
export { kafkaClusterComponent, type KafkaClusterComponent, type KafkaClusterOptions } from './kafka.js';
export { llamaCppWeightServer, llmComponent, llmThreadShare, mergeLoraWeights, type LlamaCppWeightServerOptions, type LlmServerOptions } from './llm.js';
export { DATATROVE_PACKAGES, DATATROVE_VERSION, datatrovePython } from './datatrove.js';
export { LLM_LEARNER_PACKAGES, llmLearnerPython, llmLearnerVenvDir } from './llm-learner.js';
export { childExit, daemonFiles, freePort, stopChild, type StopChildOptions } from './process.js';
export { s3Component, SEAWEEDFS_VERSION, type S3ServerOptions } from './s3.js';
export { setupLogFile, stackPaths } from './state.js';
export { cachedVenv, type CachedVenv } from './venv.js';
export { composeDockerConfig, COMPOSE_VERSION, findHarborPython, harborCommand, harborModelsPython, harborPython, HARBOR_VERSION } from './harbor.js';

export interface StackSelection {
  /** Include the model server (`stack up --llm`, or a command that selects the llm policy). @default false */
  readonly llm?: boolean;
  /** The model server's OpenAI-compatible URL; one other than the stack's own is only checked, never started. @default env LLM_BASE_URL, else STACK_LLM_URL */
  readonly llmUrl?: string;
  /**
   * Brokers: 1 is the single local node (localhost:9092); more is a KRaft cluster of that many on this machine
   * (localhost:19092...; replication factor 3, min.insync.replicas 2), which the registry then stores its
   * schemas in; other commands reach it through KAFKA_BROKERS. @default 1
   */
  readonly brokers?: number;
  /**
   * Docker engines: 1 is the stack's own; more adds engines 2..N on this machine, each with its own socket, data
   * root, exec root and pid file and the sandbox images copied in, standing for further hosts (processes pick
   * one with DOCKER_HOST; `enginePaths`). @default 1
   */
  readonly engines?: number;
  /** Include the S3 server (`stack up --s3`; or checks TRIALRUN_S3_URL when it names another). @default false */
  readonly s3?: boolean;
  /** Include the one-node Kubernetes cluster (`stack up --k8s`: k3s built once from source, pods on its containerd). @default false */
  readonly k8s?: boolean;
  /** Include every optional part, so that `stack down` and `stack status` see them. @default false */
  readonly all?: boolean;
}

/**
 * The parts in start order: the registry keeps its schemas in Kafka, images need the engine. The model
 * server is optional: only `--llm` or the llm policy brings it up; `stack down` always stops it if ours.
 */
export function stackComponents(selection: StackSelection = {}): StackComponent[] {
  const brokers = selection.brokers ?? 1;
  const cluster = brokers > 1 || selection.all ? kafkaClusterComponent({ nodes: brokers > 1 ? brokers : 3 }) : null;
  const kafka = brokers > 1 ? [cluster!, registryComponent({ brokers: cluster!.brokers.join(',') })] : [kafkaComponent(), registryComponent(), ...(selection.all ? [cluster!] : [])];
  const llm = selection.llm || selection.all ? [llmComponent(selection.llmUrl === undefined ? {} : { url: selection.llmUrl, external: selection.llmUrl.replace(/\/+$/, '') !== STACK_LLM_URL })] : [];
  const engines = selection.engines ?? 1;
  const extraEngines = extraEngineComponents(selection.all ? Math.max(engines, 2) : engines);
  const s3 = selection.s3 || selection.all ? [s3Component()] : [];
  const k8s = selection.k8s || selection.all ? [k8sComponent()] : [];
  return [...kafka, dockerComponent(), imagesComponent(), ...extraEngines, ...llm, ...s3, ...k8s];
}

export interface StackReport {
  readonly name: string;
  readonly endpoint: string;
  readonly result: string;
  readonly seconds: number;
}

/**
 * Ensures each component in order. The terminal (`log`) gets one line per component with its time; the
 * steps and the output of what set-up ran go to the component's set-up log, which a failure names.
 */
export async function stackUp(log: StackLog, components = stackComponents(), stateDir = stackPaths().stateDir): Promise<StackReport[]> {
  const reports: StackReport[] = [];
  for (const component of components) {
    const started = performance.now();
    const setupLog = setupLogFile(stateDir, component.name);
    ensureDir(dirname(setupLog));
    const note: StackLog = (line) => appendFileSync(setupLog, `${new Date().toISOString()} ${line}\n`);
    let result: 'reused' | 'started';
    try {
      result = await component.ensure(note);
    } catch (error) {
      note(`failed: ${errorMessage(error)}`);
      log(`[${component.name}] failed after ${((performance.now() - started) / 1000).toFixed(1)}s (set-up log: ${setupLog})`);
      throw error;
    }
    const report = { name: component.name, endpoint: component.endpoint(), result, seconds: (performance.now() - started) / 1000 };
    log(`[${report.name}] ${result} ${report.endpoint} (${report.seconds.toFixed(1)}s${result === 'started' ? `; set-up log: ${setupLog}` : ''})`);
    reports.push(report);
  }
  return reports;
}

export async function stackDown(log: StackLog, components = stackComponents()): Promise<StackReport[]> {
  const reports: StackReport[] = [];
  for (const component of [...components].reverse()) {
    const started = performance.now();
    const result = await component.stop((line) => log(`[${component.name}] ${line}`));
    reports.push({ name: component.name, endpoint: component.endpoint(), result, seconds: (performance.now() - started) / 1000 });
  }
  return reports;
}

export async function stackStatus(components = stackComponents()): Promise<Array<{ name: string; endpoint: string; up: boolean }>> {
  return Promise.all(components.map(async (c) => ({ name: c.name, endpoint: c.endpoint(), up: await c.isUp() })));
}

const tags = new Map<string, string>();

/**
 * Resolves a sandbox recipe name to the tag `stack up` built for it (hashed once per process). A full image
 * reference (`trialrun/task-x:0123456789ab`, `registry/name:tag`: it holds a `/` or `:`) is already a tag: a
 * task that built its own image (a Harbor task) or a job file that names one.
 */
export function imageFor(recipe: string): string {
  if (/[/:]/.test(recipe)) return recipe;
  let tag = tags.get(recipe);
  if (tag === undefined) {
    tag = resolveImageTag(recipe);
    tags.set(recipe, tag);
  }
  return tag;
}
