export { readJsonLines, RejectsFile, type Reject, type SourceLine } from './jsonl.js';
