export { ChatClient, ChatRequestError, resolveChatClientOptions, type ChatClientOptions, type ChatCompletion, type ChatMessage, type ChatTool, type ToolCallRequest } from './chat-client.js';
