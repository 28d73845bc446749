import { ConnectionError, errorMessage, TimeoutError, TrialrunError, withRetries, type ResolvedRetryOptions } from '../../schemas/index.js';

/** A non-retriable answer from a model server (bad request, auth, unknown model, a reply of the wrong shape). */
export class ChatRequestError extends TrialrunError {}

class RetriableHttpError extends ConnectionError {
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

export interface PostOptions {
  readonly apiKey: string | null;
  /** Budget for one attempt. */
  readonly timeoutMs: number;
  readonly retry: ResolvedRetryOptions;
  readonly signal?: AbortSignal;
}

/**
 * POSTs JSON to a model server and parses the JSON answer, with a timeout per attempt and retries for network
 * errors, timeouts, 408/409/429 and 5xx (a 503 is what llama.cpp answers while it loads). `attempts` counts them.
 */
export function postJson<T>(url: string, body: unknown, options: PostOptions): Promise<{ value: T; attempts: number }> {
  return post(url, body, options, (text) => {
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ChatRequestError(`${url} answered with invalid JSON: ${text.slice(0, 200)}`);
    }
  });
}

export interface GetOptions {
  /** @default none */
  readonly apiKey?: string | null;
  /** Budget for the one attempt (a GET here is a probe or a status read, never retried inside). */
  readonly timeoutMs: number;
  /** @default never aborted */
  readonly signal?: AbortSignal;
}

/**
 * GETs JSON from a model server, one attempt within `timeoutMs`: the one raw GET of connectors/llm. An unreachable
 * server or a 5xx (llama.cpp loading) is a ConnectionError, a timeout a TimeoutError (both retriable: callers that
 * wait for a server pass it to withRetries), a 4xx or an answer that is not JSON a ChatRequestError (another
 * kind of server, or the wrong path). An abort by `signal` is rethrown as it came.
 */
export async function getJson<T>(url: string, options: GetOptions): Promise<T> {
  const signal = options.signal ?? new AbortController().signal;
  let response: Response;
  try {
    response = await fetch(url, { headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}, signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]) });
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof DOMException && error.name === 'TimeoutError') throw new TimeoutError(`GET ${url}`, options.timeoutMs);
    throw new ConnectionError(`GET ${url} failed: ${errorMessage(error)}`, error);
  }
  if (response.status >= 500) throw new ConnectionError(`GET ${url}: HTTP ${response.status}`);
  if (!response.ok) throw new ChatRequestError(`GET ${url}: HTTP ${response.status}`);
  const text = await response.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ChatRequestError(`GET ${url} answered no JSON: ${text.slice(0, 200)}`);
  }
}

/** getJson where any failure means "no answer" (status reads: a server restarting or gone reports nothing). */
export const getJsonOrNull = <T>(url: string, options: GetOptions): Promise<T | null> => getJson<T>(url, options).catch(() => null);

/** postJson for endpoints that answer in plain text (vLLM's LoRA endpoints), with the same retries. */
export function postForText(url: string, body: unknown, options: PostOptions): Promise<{ value: string; attempts: number }> {
  return post(url, body, options, (text) => text);
}

async function post<T>(url: string, body: unknown, options: PostOptions, parse: (text: string) => T): Promise<{ value: T; attempts: number }> {
  const signal = options.signal ?? new AbortController().signal;
  const text = JSON.stringify(body);
  let attempts = 0;
  const value = await withRetries(
    async () => {
      attempts++;
      return parse(await postOnce(url, text, options, signal));
    },
    options.retry,
    signal,
  );
  return { value, attempts };
}

async function postOnce(url: string, body: string, options: PostOptions, signal: AbortSignal): Promise<string> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
      body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
    });
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof DOMException && error.name === 'TimeoutError') throw new TimeoutError(`POST ${url}`, options.timeoutMs);
    throw new ConnectionError(`POST ${url} failed: ${errorMessage(error)}`, error);
  }
  const text = await response.text();
  if (response.ok) return text;
  const detail = `POST ${url}: HTTP ${response.status} ${text.slice(0, 300)}`;
  if ([408, 409, 429].includes(response.status) || response.status >= 500) {
    const retryAfter = Number(response.headers.get('retry-after'));
    throw new RetriableHttpError(detail, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null);
  }
  throw new ChatRequestError(detail);
}
