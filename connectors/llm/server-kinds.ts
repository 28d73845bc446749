import { probeLlamaCpp } from './llama-cpp/index.js';
import { probeOpenAi } from './openai/index.js';
import { probeVllm } from './vllm/index.js';

/**
 * The server kinds a policy samples from, each a folder here, in the order `probeServerKind` tries them: the most
 * specific first, plain OpenAI (any server) last. A new kind adds its folder and its line here.
 */
const CHAT_SERVER_PROBES = [
  { kind: 'llama.cpp', probe: probeLlamaCpp },
  { kind: 'vllm', probe: probeVllm },
  { kind: 'openai', probe: probeOpenAi },
] as const;

export type ChatServerKind = (typeof CHAT_SERVER_PROBES)[number]['kind'];
export const CHAT_SERVER_KINDS: readonly ChatServerKind[] = CHAT_SERVER_PROBES.map((p) => p.kind);

/** The kind of the server at `rootUrl` (its root, not its `/v1` base): the first whose probe answers true. */
export async function probeServerKind(rootUrl: string, apiKey: string | null): Promise<ChatServerKind> {
  for (const { kind, probe } of CHAT_SERVER_PROBES) if (await probe(rootUrl, apiKey)) return kind;
  return 'openai';
}
