import { getJsonOrNull } from '../http.js';

/** Budget of the probe: a server that does not answer `/version` within it is taken for another kind. */
const PROBE_TIMEOUT_MS = 5_000;

/** True when the server at `rootUrl` answers vLLM's `/version` (`{"version": "..."}`); false for any other answer or none. */
export async function probeVllm(rootUrl: string, apiKey: string | null): Promise<boolean> {
  const answer = await getJsonOrNull<{ version?: unknown }>(`${rootUrl}/version`, { apiKey, timeoutMs: PROBE_TIMEOUT_MS });
  return typeof answer?.version === 'string';
}
