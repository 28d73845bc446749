/**
 * The task job's stages, one file each, in the order the job runs them: read (+ map, tests) -> validate ->
 * dedup -> derive -> curriculum (plan) -> build. `stage.ts` is what they share: the run they work in and the
 * clock and reject counts each ends into its `StageReport`.
 */
export { buildTasks, planTasks, spilledTaskRows, taskRowsOf, type TaskOutput, type TaskRows } from './build.js';
export { dedupRows, type DuplicateRecord } from './dedup.js';
export { deriveTasks, type DerivationReport, type KindSurvival } from './derive.js';
export { convertTests, readSources } from './read.js';
export { type JobRun, type StageReport } from './stage.js';
export { ValidatedRows, type TaskEntry } from './validate.js';
