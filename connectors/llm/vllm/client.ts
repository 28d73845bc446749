import { ChatClient, type ChatClientOptions } from '../openai/client.js';
import { servedModelName } from '../weight-server.js';

/**
 * vLLM's chat client: the OpenAI one, asking for the prompt's and the reply's token ids (`return_token_ids`), naming
 * the adapter of the version weight sync serves as its model, and requiring a tool call where decoding is constrained
 * (vLLM enforces `tool_choice: 'required'` with structured outputs).
 */
export function vllmChatClient(options: ChatClientOptions & { readonly model: string }, version: number, constrained: boolean): ChatClient {
  return new ChatClient({ ...options, model: servedModelName(options.model, version), returnTokenIds: true, toolChoice: constrained ? 'required' : 'auto' });
}
