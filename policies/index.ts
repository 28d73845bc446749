export * from './types.js';
export * from './linear-repair/index.js';
