/**
 * Where the stack's own model server (`trialrun stack up --llm`, stack/llm.ts) listens, and the name it serves
 * its model under: the llm policy's defaults when LLM_BASE_URL and LLM_MODEL are not set. Port 8090 is none of
 * the stack's others (Kafka 9092/9093, the schema registry 8081).
 */
export const STACK_LLM_PORT = 8090;
export const STACK_LLM_URL = `http://127.0.0.1:${STACK_LLM_PORT}/v1`;
export const STACK_LLM_MODEL = 'smollm2-135m-instruct';
