import { LlamaCppClient } from './client.js';

/**
 * True when the server at `rootUrl` answers llama.cpp's `/props`; a server that cannot be reached is a ConnectionError
 * rather than another kind (see `LlamaCppClient.probe`).
 */
export const probeLlamaCpp = (rootUrl: string, apiKey: string | null): Promise<boolean> => LlamaCppClient.probe(rootUrl, apiKey);
