export { DockerSandboxPool, LABELS, type DockerPoolOptions } from './docker.js';
export { CappedBuffer } from './output.js';
export * from './types.js';
