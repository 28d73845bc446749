import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { z } from 'zod';
import {
  DecodeError,
  TOPICS,
  ValidationError,
  ConfigError,
  ConnectionError,
  describeIssues,
  hasOpenRoot,
  toRegistrySchema,
  errorMessage,
  type TopicKey,
  type TopicNames,
  type TopicValue,
} from '../../schemas/index.js';
import { parseContract, WireCheck, type CheckedRecord } from './contract.js';

export interface RegistryOptions {
  /** Confluent-compatible registry base URL. @default env SCHEMA_REGISTRY_URL, else 'http://localhost:8081/apis/ccompat/v7' (the stack's Apicurio) */
  url?: string;
  /** Compatibility level set on every subject before registering. @default 'BACKWARD' */
  compatibility?: 'BACKWARD' | 'BACKWARD_TRANSITIVE' | 'FULL' | 'NONE';
  /** Notable registry changes (a subject moved to a closed content model). @default none */
  log?: (line: string) => void;
}

export function resolveRegistryUrl(options: RegistryOptions = {}, env: NodeJS.ProcessEnv = process.env): string {
  const url = options.url ?? env.SCHEMA_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7';
  try {
    return new URL(url).toString().replace(/\/$/, '');
  } catch {
    throw new ConfigError(`RegistryOptions.url: "${url}" is not a URL`);
  }
}

/**
 * Encodes and decodes topic values in the Confluent wire format (magic byte, schema id, JSON) with JSON
 * Schemas generated from the zod contracts. zod is the source of truth and checks values both ways:
 * nothing invalid is written, and nothing invalid reaches a handler. It is the only check of a value's
 * content: the registry holds the JSON Schemas (for compatibility and for other readers), and the
 * framing is done here rather than by the registry client, whose encode and decode would run those
 * schemas over every record as a second check of the same contract.
 */
export class TopicSerde {
  private readonly registry: SchemaRegistry;
  private readonly ids = new Map<TopicKey, number>();
  /** Schema ids known to belong (true) or not (false) to a topic's subject, as `<key>/<id>`. */
  private readonly subjectOfId = new Map<string, boolean>();
  private readonly wireCheck = new WireCheck();
  private readonly baseUrl: string;

  constructor(
    private readonly names: TopicNames,
    private readonly options: RegistryOptions = {},
  ) {
    this.baseUrl = resolveRegistryUrl(options);
    // Used to register schemas only (it compiles each with ajv there); zod checks formats such as date-time.
    this.registry = new SchemaRegistry({ host: this.baseUrl }, { [SchemaType.JSON]: { strict: false, validateFormats: false, allErrors: true, detailedErrorPaths: true } as object });
  }

  subject(key: TopicKey): string {
    return `${this.names.name(key)}-value`;
  }

  /** Sets each subject's compatibility and registers the schema generated from zod (idempotent). */
  async register(keys: readonly TopicKey[] = Object.keys(TOPICS) as TopicKey[]): Promise<void> {
    for (const key of keys) {
      const subject = this.subject(key);
      const level = this.options.compatibility ?? 'BACKWARD';
      await this.setCompatibility(subject, level);
      const schema = toRegistrySchema(TOPICS[key].schema);
      // The client checks that the subject's level is the one it is told (its own default is BACKWARD).
      const registerAt = async (compatibility: string): Promise<void> =>
        void this.ids.set(key, (await this.registry.register({ type: SchemaType.JSON, schema }, { subject, compatibility: compatibility as COMPATIBILITY })).id);
      try {
        await registerAt(level);
      } catch (error) {
        if (!isIncompatible(error)) throw new ConnectionError(`registering the schema of ${subject} at ${this.baseUrl} failed: ${errorMessage(error)}`, error);
        const latest = await this.latestSchema(subject);
        if (latest === null || !hasOpenRoot(latest)) {
          throw new ConfigError(`the registry at ${this.baseUrl} refuses this build's schema of ${subject} as incompatible with its registered versions: ${errorMessage(error)}`);
        }
        // Subjects registered by builds before closed content models: closing the model is one narrowing step
        // (safe for data written through this serde, which never carries unlisted properties), taken once.
        this.options.log?.(`schema registry: moving ${subject} to a closed content model (one step without the compatibility check)`);
        await this.setCompatibility(subject, 'NONE');
        try {
          await registerAt('NONE');
        } finally {
          await this.setCompatibility(subject, level);
        }
      }
    }
  }

  /** The newest schema registered under a subject, or null when it has none. */
  private async latestSchema(subject: string): Promise<string | null> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}/subjects/${encodeURIComponent(subject)}/versions/latest`);
    } catch (error) {
      throw new ConnectionError(`the schema registry at ${this.baseUrl} did not answer: ${errorMessage(error)}`, error);
    }
    if (response.status === 404) return null;
    if (!response.ok) throw new ConnectionError(`reading the latest schema of ${subject} failed: HTTP ${response.status}`);
    return ((await response.json()) as { schema: string }).schema;
  }

  /** The id of the schema this build registered for a topic (registering it if needed). */
  async schemaId(key: TopicKey): Promise<number> {
    if (!this.ids.has(key)) await this.register([key]);
    return this.ids.get(key)!;
  }

  /** Checks a value against its zod contract, once, and frames it (magic byte 0, schema id, JSON). */
  async encode<K extends TopicKey>(key: K, value: TopicValue<K>): Promise<Buffer> {
    const parsed = TOPICS[key].schema.safeParse(value);
    if (!parsed.success) throw new ValidationError(`a ${TOPICS[key].name} record`, describeIssues(parsed.error));
    const json = JSON.stringify(parsed.data);
    const framed = Buffer.allocUnsafe(5 + Buffer.byteLength(json));
    framed[0] = 0;
    framed.writeInt32BE(await this.schemaId(key), 1);
    framed.write(json, 5);
    return framed;
  }

  /**
   * Throws DecodeError for bytes that are not registry-framed JSON, ValidationError for contract breaks.
   * The zod contract is the one check of a record's content: the registry client's own decode would run
   * its JSON Schema (derived from that contract) over every record first, a second check of the same
   * thing, so the frame is read here and the schema id is only checked to belong to the topic's subject.
   */
  async decode<K extends TopicKey>(key: K, bytes: Buffer | null): Promise<TopicValue<K>> {
    return parseContract(key, (await this.unframe(key, bytes)).input);
  }

  /**
   * Reads and checks a record like `decode`, without rebuilding it: for readers that keep the record's
   * bytes as they are (the analytics sink hands them to DuckDB) and need its content only checked. The
   * check is the contract's JSON Schema (see WireCheck), and its errors are decode's.
   */
  async check(key: TopicKey, bytes: Buffer | null): Promise<CheckedRecord> {
    const record = await this.unframe(key, bytes);
    this.wireCheck.check(key, record.input);
    return record;
  }

  /** The frame read and the JSON parsed, nothing checked yet. */
  private async unframe(key: TopicKey, bytes: Buffer | null): Promise<CheckedRecord> {
    const what = `a ${TOPICS[key].name} record`;
    if (bytes === null) throw new DecodeError(`${what} has no value (tombstone)`);
    if (bytes.length < 5 || bytes[0] !== 0) throw new DecodeError(`${what} could not be decoded (not in the registry wire format: no magic byte 0 and schema id)`);
    const id = bytes.readInt32BE(1);
    if (!(await this.belongsTo(key, id))) throw new DecodeError(`${what} could not be decoded: its schema id ${id} is not a version of ${this.subject(key)}`);
    const json = bytes.subarray(5);
    try {
      return { input: JSON.parse(json.toString('utf8')) as unknown, json };
    } catch (error) {
      throw new DecodeError(`${what} could not be decoded: its value is not JSON: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** A record framed with another subject's schema must not be read as this topic's (it would validate against the wrong contract). */
  private async belongsTo(key: TopicKey, id: number): Promise<boolean> {
    if (this.ids.get(key) === id) return true;
    const cacheKey = `${key}/${id}`;
    const known = this.subjectOfId.get(cacheKey);
    if (known !== undefined) return known;
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}/schemas/ids/${id}/versions`);
    } catch (error) {
      throw new ConnectionError(`the schema registry at ${this.baseUrl} did not answer: ${errorMessage(error)}`, error);
    }
    if (response.status === 404) return false;
    if (!response.ok) throw new ConnectionError(`looking up schema id ${id} failed: HTTP ${response.status}`);
    const versions = (await response.json()) as Array<{ subject: string }>;
    const belongs = versions.some((v) => v.subject === this.subject(key));
    this.subjectOfId.set(cacheKey, belongs);
    return belongs;
  }

  private async setCompatibility(subject: string, level: string): Promise<void> {
    const url = `${this.baseUrl}/config/${encodeURIComponent(subject)}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ compatibility: level }),
      });
    } catch (error) {
      throw new ConnectionError(`the schema registry at ${this.baseUrl} did not answer: ${errorMessage(error)}`, error);
    }
    if (!response.ok) throw new ConnectionError(`setting ${level} compatibility on ${subject} failed: HTTP ${response.status} ${await response.text()}`);
  }
}

/** The registry refused a schema under the subject's compatibility rule (HTTP 409). */
function isIncompatible(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return status === 409 || /\b409\b|incompatible/i.test(errorMessage(error));
}
