export { parseContract, WireCheck, type CheckedRecord } from './contract.js';
export { TopicSerde, resolveRegistryUrl, type RegistryOptions } from './serde.js';
