export * from './types.js';
export * from './program-repair/index.js';
