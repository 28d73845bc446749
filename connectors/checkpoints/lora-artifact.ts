import { TrialrunError } from '../../schemas/index.js';

/** `CheckpointArtifact.format` of an LLM's LoRA adapter (the checkpoint contract in docs/llm.md). */
export const LORA_SAFETENSORS_FORMAT = 'lora-safetensors/v1';

/** An artifact that is not a usable LoRA adapter for the weights it would be applied to; never retried. */
export class IncompatibleAdapterError extends TrialrunError {}

/** The `__metadata__` of a `lora-safetensors/v1` artifact, checked. */
export interface LoraArtifactInfo {
  /** The LoraConfig as peft writes it (r, lora_alpha, target_modules, ...). */
  readonly peftConfig: Readonly<Record<string, unknown>>;
  readonly baseModel: string;
  /** sha256 of the GGUF the adapter was trained on. */
  readonly baseSha256: string;
  readonly policyVersion: number;
  readonly parentVersion: number | null;
  /** Tensor names in the file (peft's names: `base_model.model.<module>.lora_A.weight`, ...). */
  readonly tensors: readonly string[];
}

/** The largest header a safetensors reader accepts (its own limit is 100 MB); more is not a real file. */
const MAX_HEADER_BYTES = 100_000_000;

const decimal = (what: string, value: string | undefined, nullable: boolean): number | null => {
  if (value === undefined || value === '') {
    if (nullable) return null;
    throw new IncompatibleAdapterError(`the LoRA artifact's metadata has no ${what}`);
  }
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new IncompatibleAdapterError(`the LoRA artifact's ${what} "${value}" is not a whole number`);
  return Number(value);
};

/**
 * Reads the header of a safetensors file (an 8-byte little-endian length, then that much JSON: the tensors'
 * dtypes, shapes and offsets, and `__metadata__`, a string map) and checks what the contract puts there.
 * The tensors themselves are read by whoever applies them (the GGUF converter, the server).
 */
export function readLoraArtifact(bytes: Buffer): LoraArtifactInfo {
  if (bytes.length < 8) throw new IncompatibleAdapterError(`a LoRA artifact of ${bytes.length} bytes is no safetensors file`);
  const headerBytes = bytes.readBigUInt64LE(0);
  if (headerBytes > BigInt(Math.min(MAX_HEADER_BYTES, bytes.length - 8))) throw new IncompatibleAdapterError(`the artifact's safetensors header length (${headerBytes}) runs past its ${bytes.length} bytes`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(bytes.subarray(8, 8 + Number(headerBytes)).toString('utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new IncompatibleAdapterError(`the artifact's safetensors header is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw new IncompatibleAdapterError('the artifact\'s safetensors header is not a JSON object');
  const { __metadata__: raw, ...tensors } = header;
  if (raw === undefined || raw === null || typeof raw !== 'object' || Array.isArray(raw) || Object.values(raw).some((v) => typeof v !== 'string')) {
    throw new IncompatibleAdapterError('the artifact has no __metadata__ string map');
  }
  const metadata = raw as Record<string, string>;
  if (metadata.format !== LORA_SAFETENSORS_FORMAT) throw new IncompatibleAdapterError(`the artifact's metadata format is "${metadata.format ?? ''}", not "${LORA_SAFETENSORS_FORMAT}"`);
  let peftConfig: unknown;
  try {
    peftConfig = JSON.parse(metadata.peft_config ?? '');
  } catch {
    throw new IncompatibleAdapterError('the artifact\'s peft_config is not JSON');
  }
  if (peftConfig === null || typeof peftConfig !== 'object' || Array.isArray(peftConfig)) throw new IncompatibleAdapterError('the artifact\'s peft_config is not a JSON object');
  if (!/^[0-9a-f]{64}$/.test(metadata.base_sha256 ?? '')) throw new IncompatibleAdapterError(`the artifact's base_sha256 "${metadata.base_sha256 ?? ''}" is not a sha256`);
  const names = Object.keys(tensors);
  if (names.length === 0) throw new IncompatibleAdapterError('the artifact holds no tensors');
  return {
    peftConfig: peftConfig as Record<string, unknown>,
    baseModel: metadata.base_model ?? '',
    baseSha256: metadata.base_sha256!,
    policyVersion: decimal('policy_version', metadata.policy_version, false)!,
    parentVersion: decimal('parent_version', metadata.parent_version, true),
    tensors: names,
  };
}
