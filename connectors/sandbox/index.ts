export { AgentSandbox, type SandboxHandle } from './agent-sandbox.js';
export { AGENT_LABEL, DockerSandboxPool, LABELS, agentCommand, dockerSandboxesOf, reapDockerSandboxes, type DockerPoolOptions } from './docker.js';
export { processSandboxesOf, ProcessSandboxPool, reapProcessSandboxes, type ProcessPoolOptions } from './bubblewrap.js';
export { ensureBubblewrap, ensureDebianProgram } from './install.js';
export { CappedBuffer } from './output.js';
export { newOwner } from './owner.js';
export { defaultRootfsDir, RootfsStore, type ImageRootfs } from './rootfs.js';
export { AgentSandboxPool, type PoolOptions, type ReapReport, type SandboxBackend } from './pool.js';
export * from './types.js';
