import { DockerSandboxPool, ProcessSandboxPool, type AgentSandboxPool } from '../connectors/sandbox/index.js';
import { LLM_POLICY } from '../policies/index.js';
import { ConfigError } from '../schemas/index.js';
import { choiceOption, type OptionValues } from './options.js';

export const SANDBOX_BACKENDS = ['process', 'docker'] as const;
export type SandboxBackendName = (typeof SANDBOX_BACKENDS)[number];

export const SANDBOX_HELP =
  'sandbox backend: process (bubblewrap: namespaces, cgroups, rlimits, sized tmpfs; the default for the scripted repair policies, ' +
  'whose code under test is the task\'s own with one candidate edit, and for --policy llm --scaffold repair-script) or docker (adds a ' +
  'seccomp filter; the default for --policy llm as an agent, which runs whatever the model writes). Both pass the same sandbox contract (docs/sandbox.md)';

/**
 * `--sandbox`, or the cheapest backend that keeps the contract for the policy: the scripted repair policies
 * only ever pick among candidate edits of the task's own module, which the process backend confines as the
 * contract asks (about 20x cheaper per sandbox here, docs/learner.md); a model's free-form code keeps Docker's
 * seccomp filter too.
 */
export function sandboxBackend(values: OptionValues, policyId: string): SandboxBackendName {
  // The llm policy under the repair script picks among the same candidate edits as the scripted policies.
  if (values.sandbox === undefined) return policyId === LLM_POLICY && values.scaffold !== 'repair-script' ? 'docker' : 'process';
  return choiceOption(values, 'sandbox', SANDBOX_BACKENDS);
}

/** The processors of `trialrun run` that start sandboxes. */
const SANDBOXED_PROCESSORS: readonly string[] = ['rollout-worker', 'verifier'];

/**
 * `trialrun run <processor> --sandbox`: docker unless given, whatever the policy, because a verifier cannot know which
 * policy wrote the code it runs and a host's worker and verifier should need the same engine; process is for a host
 * without a Docker engine (docs/deploy.md). Only the processors that start sandboxes take the option.
 */
export function processorSandboxBackend(values: OptionValues, processor: string): SandboxBackendName {
  if (values.sandbox === undefined) return 'docker';
  if (!SANDBOXED_PROCESSORS.includes(processor)) throw new ConfigError(`--sandbox goes with run ${SANDBOXED_PROCESSORS.join(' or run ')}, not run ${processor}`);
  return choiceOption(values, 'sandbox', SANDBOX_BACKENDS);
}

export function openSandboxPool(backend: SandboxBackendName): AgentSandboxPool {
  return backend === 'process' ? new ProcessSandboxPool() : new DockerSandboxPool();
}
