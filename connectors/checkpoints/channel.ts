import { readFile, writeFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { createInterface } from 'node:readline';
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import { ConfigError, errorMessage, isRetriable } from '../../schemas/index.js';
import { verifySha256 } from '../storage/index.js';
import type { CheckpointArtifact, CheckpointStore } from './store.js';

/**
 * The checkpoint channel: how a learner in a process of its own (the Python LLM learner) publishes its artifacts
 * through its launcher's checkpoint store, so that every checkpoint, whoever trains it, goes through the one store
 * (one key rule, one S3 client, write-once per version, sha256 checked on every read). The learner writes each
 * artifact to a scratch file of its own and asks, one JSON line per request, answered in order:
 *
 *   put: {"id", "op": "put", "policyId", "version", "path", "sha256", "format"}  ->  {"id", "artifact": CheckpointArtifact}
 *   get: {"id", "op": "get", "uri", "sha256", "path"}                            ->  {"id", "path"}  (the bytes written there, checked)
 *
 * A request that fails is answered {"id", "error": {"name", "message", "retriable"}}: the learner tries a retriable
 * one again (S3 not answering) and stops on any other. The Python end is llm-learner/trialrun_llm_learner/store_channel.py.
 */

const PutRequest = z.object({
  id: z.number().int(),
  op: z.literal('put'),
  policyId: z.string(),
  version: z.number().int(),
  path: z.string(),
  sha256: z.string(),
  format: z.string().nullable(),
});
const GetRequest = z.object({ id: z.number().int(), op: z.literal('get'), uri: z.string(), sha256: z.string(), path: z.string() });
const ChannelRequest = z.discriminatedUnion('op', [PutRequest, GetRequest]);
type ChannelRequest = z.infer<typeof ChannelRequest>;

export type ChannelReply = { readonly id: number; readonly artifact: CheckpointArtifact } | { readonly id: number; readonly path: string } | { readonly id: number; readonly error: { readonly name: string; readonly message: string; readonly retriable: boolean } };

/** The scratch file a request names: only an absolute path (the learner's own folder), never one relative to this process. */
function scratchPath(path: string): string {
  if (!isAbsolute(path)) throw new ConfigError(`checkpoint channel: "${path}" is not an absolute path`);
  return path;
}

/** Carries out one request line against `store`; never throws (a failure is the reply). */
export async function answerCheckpointRequest(line: string, store: CheckpointStore): Promise<ChannelReply> {
  let request: ChannelRequest;
  let id = -1;
  try {
    const raw: unknown = JSON.parse(line);
    if (typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'number') id = (raw as { id: number }).id;
    const parsed = ChannelRequest.safeParse(raw);
    if (!parsed.success) throw new ConfigError(`checkpoint channel: not a request (${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'request'}: ${issue.message}`).join('; ')})`);
    request = parsed.data;
  } catch (error) {
    const failure = error instanceof SyntaxError ? new ConfigError(`checkpoint channel: a request that is not JSON (${error.message})`) : error;
    return { id, error: { name: failure instanceof Error ? failure.name : 'Error', message: errorMessage(failure), retriable: false } };
  }
  try {
    if (request.op === 'put') {
      const path = scratchPath(request.path);
      // The learner's digest is checked against the bytes read here: a scratch file changed or cut short is never published.
      const data = verifySha256(await readFile(path), request.sha256, `the learner's scratch file ${path}`);
      return { id: request.id, artifact: await store.put(request.policyId, request.version, data, request.format) };
    }
    const path = scratchPath(request.path);
    await writeFile(path, await store.get({ uri: request.uri, sha256: request.sha256, bytes: 0, format: null }));
    return { id: request.id, path };
  } catch (error) {
    return { id: request.id, error: { name: error instanceof Error ? error.name : 'Error', message: errorMessage(error), retriable: isRetriable(error) } };
  }
}

/**
 * Answers the requests on `channel` (a socket the learner process holds the other end of) one at a time, until the
 * learner closes it or exits. Resolves then; a broken channel (the learner killed mid-request) also just ends it.
 */
export async function serveCheckpointChannel(channel: Duplex, store: CheckpointStore): Promise<void> {
  // A learner that dies mid-request resets the socket: that ends the channel, it is not this process's failure.
  channel.on('error', () => channel.destroy());
  const lines = createInterface({ input: channel, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (line.trim() === '') continue;
      const reply = await answerCheckpointRequest(line, store);
      if (channel.writable) channel.write(`${JSON.stringify(reply)}\n`);
    }
  } catch {
    // The same: the stream ended in an error because its other end is gone.
  } finally {
    lines.close();
  }
}
