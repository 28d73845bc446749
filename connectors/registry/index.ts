export { TopicSerde, parseContract, resolveRegistryUrl, type RegistryOptions } from './serde.js';
