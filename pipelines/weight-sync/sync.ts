import { checkCheckpoint, followCheckpoints, IncompatibleAdapterError, LORA_SAFETENSORS_FORMAT, NOTHING_FOLLOWED, readLoraArtifact, type CheckpointStore, type FollowedCheckpoints } from '../../connectors/checkpoints/index.js';
import type { ServedAdapter, WeightServer } from '../../connectors/llm/index.js';
import { LLM_POLICY } from '../../policies/index.js';
import { ConfigError, wholeNumber, type PolicyCheckpoint } from '../../schemas/index.js';
import { StateStore, StreamProcessor, type MembershipOptions, type ProcessorContext } from '../runtime/index.js';

export interface WeightSyncOptions extends MembershipOptions {
  /** The inference server whose weights are set (its kind is configuration: see docs/llm.md). */
  server: WeightServer;
  /** Where checkpoint artifacts are read. */
  store: CheckpointStore;
  /** The policy whose checkpoints are applied. @default 'llm' */
  policyId?: string;
  /** Budget for applying one checkpoint (converting it, restarting or reloading the server). @default 600000 */
  timeoutMs?: number;
  /** This instance's name (ProcessorOptions.instanceId). @default '0' */
  instanceId?: string;
  /** Called once the server serves a version, with the ms from the record's broker timestamp (the sync-latency figure). @default none */
  onServed?: (version: number, latencyMs: number) => void;
}

export interface ResolvedWeightSyncOptions {
  readonly policyId: string;
  readonly timeoutMs: number;
}

export function resolveWeightSyncOptions(options: Pick<WeightSyncOptions, 'policyId' | 'timeoutMs'>): ResolvedWeightSyncOptions {
  const policyId = options.policyId ?? LLM_POLICY;
  if (policyId.trim() === '') throw new ConfigError('WeightSyncOptions.policyId is empty');
  const timeoutMs = options.timeoutMs ?? 600_000;
  wholeNumber('WeightSyncOptions.timeoutMs', timeoutMs, { min: 1000, unit: 'ms' });
  return { policyId, timeoutMs };
}

/**
 * Checks a checkpoint before anything is applied: the record passes `checkCheckpoint` (it names an artifact with
 * the record's sha256), the bytes pass their sha256 (the store checks), they are a `lora-safetensors/v1` adapter of
 * this very version, trained on the base weights the server loads. Each failure is a non-retriable error naming
 * what was wrong, so the record becomes a dead letter with its reason and the server keeps what it serves.
 */
export async function verifiedAdapter(checkpoint: PolicyCheckpoint, store: CheckpointStore, server: WeightServer): Promise<ServedAdapter> {
  const { version } = checkpoint;
  const artifact = checkCheckpoint(checkpoint);
  if (!artifact) throw new IncompatibleAdapterError(`checkpoint v${version} is the base model, not an adapter`);
  if (artifact.format !== null && artifact.format !== LORA_SAFETENSORS_FORMAT) throw new IncompatibleAdapterError(`checkpoint v${version}: artifact format "${artifact.format}" is not ${LORA_SAFETENSORS_FORMAT}`);
  const bytes = await store.get(artifact);
  const info = readLoraArtifact(bytes);
  if (info.policyVersion !== version) throw new IncompatibleAdapterError(`checkpoint v${version}: its artifact says it is v${info.policyVersion}`);
  const base = await server.baseSha256();
  if (base !== null && info.baseSha256 !== base) throw new IncompatibleAdapterError(`checkpoint v${version} was trained on base weights sha256 ${info.baseSha256}; the ${server.kind} server loads ${base}`);
  return { version, bytes, info };
}

/**
 * Makes `server` serve the base model (version 0) unless it does. A run starts there whatever an earlier run left
 * served: a version number names a checkpoint of one run only, so a server still on another run's v2 would pass
 * for this run's v2 (weight sync would not restart it), and an "untrained" evaluation would sample trained weights.
 */
export async function serveBaseModel(server: WeightServer, signal: AbortSignal = new AbortController().signal): Promise<void> {
  if ((await server.servedVersion(signal)) !== 0) await server.serve(null, signal);
}

/**
 * Weight sync: follows the checkpoint and pin topics of one policy and makes the inference server serve the
 * version rollouts should use, as `followCheckpoints` decides: the pinned one after a rollback, else the newest.
 * The server names the version in every reply (`<model>@v<N>`), which is what a rollout turn records
 * (`LlmCall.policyVersion`): a turn never carries a version its server did not serve, whenever the sync lands. A
 * record that cannot be applied is a dead letter with its reason; the server keeps serving what it served.
 */
export function createWeightSync(context: ProcessorContext, options: WeightSyncOptions): StreamProcessor<'policyCheckpoints' | 'policyPins'> {
  const { policyId, timeoutMs } = resolveWeightSyncOptions(options);
  const { server, store } = options;
  const state = new StateStore<FollowedCheckpoints>('state', context.names.changelog('weight-sync', 'state'));

  const serve = async (target: PolicyCheckpoint | null, verified: ServedAdapter | null, signal: AbortSignal, publishedAt: number): Promise<void> => {
    const version = target?.version ?? 0;
    // A record delivered again after a crash, or a pin to what is served, needs no restart.
    if ((await server.servedVersion(signal)) !== version) {
      const adapter = version === 0 ? null : (verified ?? (await verifiedAdapter(target!, store, server)));
      await server.serve(adapter, signal);
    }
    options.onServed?.(version, Date.now() - publishedAt);
  };

  return new StreamProcessor(
    context,
    // One record per transaction: a checkpoint applied is committed before the next is looked at.
    { name: 'weight-sync', inputs: ['policyCheckpoints', 'policyPins'], stores: [state] as StateStore<unknown>[], maxRecordsPerTransaction: 1, timeoutMs, retry: { retries: 2, initialDelayMs: 2000, maxDelayMs: 20_000 }, sessionTimeoutMs: options.sessionTimeoutMs, instanceId: options.instanceId },
    async ({ record, signal }) => {
      if (record.key !== policyId) return [];
      const publishedAt = Number(record.timestamp);
      const step = followCheckpoints(
        state.get(policyId) ?? NOTHING_FOLLOWED,
        record.topicKey === 'policyCheckpoints' ? { topic: 'checkpoint', checkpoint: record.value } : { topic: 'pin', checkpoint: record.value.checkpoint },
      );
      // The newest again goes on (a retry of this record sees its own staged state): serve() restarts nothing if it is served.
      if (step === null) return [];
      const verified = step.incoming && step.incoming.version > 0 ? await verifiedAdapter(step.incoming, store, server) : null;
      state.put(policyId, step.next);
      if (step.servedChanges) await serve(step.serve, step.serve === step.incoming ? verified : null, signal, publishedAt);
      return [];
    },
  );
}
