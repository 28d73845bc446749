export { rescore, type RescoreOptions, type RescoreProgress, type RescoreReport } from './rescore.js';
