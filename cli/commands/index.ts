import type { Command } from '../command.js';
import { ceilingCommand } from './ceiling.js';
import { compactCommand } from './compact.js';
import { dashboardCommand } from './dashboard.js';
import { demoCommand } from './demo.js';
import { exportCommand } from './export.js';
import { importCommand } from './import.js';
import { learnCommand } from './learn.js';
import { notebookCommand } from './notebook.js';
import { policyCommand } from './policy.js';
import { replayCommand } from './replay.js';
import { runProcessorCommand } from './run.js';
import { sandboxCommand } from './sandbox.js';
import { sqlCommand } from './sql.js';
import { stackCommand } from './stack.js';
import { tasksCommand } from './tasks.js';
import { topicsCommand } from './topics.js';
import { verifyCommand } from './verify.js';

/** Every command of the CLI, in the order `trialrun --help` lists them. */
export const COMMANDS: readonly Command[] = [
  stackCommand,
  demoCommand,
  dashboardCommand,
  tasksCommand,
  sqlCommand,
  compactCommand,
  notebookCommand,
  exportCommand,
  importCommand,
  replayCommand,
  topicsCommand,
  runProcessorCommand,
  policyCommand,
  learnCommand,
  ceilingCommand,
  sandboxCommand,
  verifyCommand,
];
