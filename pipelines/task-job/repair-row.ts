import { z } from 'zod';

/** One row of a program-repair task file (the bundled `tasks/repair-bundle.jsonl` format). */
export const RepairTaskRow = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"'),
  title: z.string().min(1),
  description: z.string().min(1),
  module: z.string().regex(/^[A-Za-z_]\w*\.py$/, 'must be a Python module file name such as "intervals.py"'),
  buggy_source: z.string().min(1),
  fixed_source: z.string().min(1),
  visible_tests: z.string().min(1),
  hidden_tests: z.string().min(1),
  tags: z.array(z.string()).default([]),
  priority: z.number().int().default(0),
  split: z.enum(['train', 'eval']).default('train'),
});
export type RepairTaskRow = z.infer<typeof RepairTaskRow>;
