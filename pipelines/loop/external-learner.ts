import type { TopicKey } from '../../schemas/index.js';
import type { ProcessorContext } from '../runtime/index.js';
import { committedPastLastRecord } from '../../connectors/kafka/index.js';

/**
 * A learner that runs in a process of its own (the Python LLM learner, for a policy kind whose `trainable` is
 * 'external'), on the loop's topics and checkpoint store. The loop starts it with its processors, fails when it
 * exits on its own, counts it done once its consumer group has committed past every trajectory and reward, and
 * stops it at the end.
 */
export interface ExternalLearner {
  /** Its consumer group on `trajectories` and `rewards`: what it committed is what it has consumed. */
  readonly groupId: string;
  /** Starts the process; rejects when it cannot be started. */
  start(): Promise<void>;
  /** Null while it runs (or was never started); the error that says why, once it has exited before `stop`. */
  failure(): Error | null;
  /** Asks it to stop (it finishes the update in hand and commits) and waits for it; rejects when it exits with a failure. */
  stop(): Promise<void>;
}

/** The learner's inputs: it joins each trajectory with its reward. */
const LEARNER_INPUTS: readonly TopicKey[] = ['trajectories', 'rewards'];

/** Whether the learner's group has committed past the last record of each partition of its inputs. */
export async function committedPastInputs(context: ProcessorContext, groupId: string): Promise<boolean> {
  for (const key of LEARNER_INPUTS) if (!(await committedPastLastRecord(context.kafka, groupId, context.names.name(key)))) return false;
  return true;
}
