export { prepareTasks, publishTasks, runTaskJob, type TaskJobOptions, type TaskJobReport } from './job.js';
export { RepairTaskRow } from './repair-row.js';
