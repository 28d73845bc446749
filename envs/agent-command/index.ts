export * from './env.js';
export * from './spec.js';
