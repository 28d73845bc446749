import { allAnswer, SANDBOX_RETRY, storeAnswers, StreamProcessor, type Accept, type MembershipOptions, type ProcessorContext } from '../runtime/index.js';
import type { VerifierOptions } from './options.js';
import { Verifier } from './verifier.js';

export interface VerifierProcessorOptions extends VerifierOptions, MembershipOptions {
  /** Which trajectories this processor verifies; the others are committed past. @default all */
  accept?: Accept<'trajectories'>;
}

export function createVerifierProcessor(context: ProcessorContext, options: VerifierProcessorOptions): StreamProcessor<'trajectories'> {
  const { accept, sessionTimeoutMs, ...verifierOptions } = options;
  const verifier = new Verifier(verifierOptions);
  return new StreamProcessor(
    context,
    { name: 'verifier', inputs: ['trajectories'], instanceId: verifier.options.instanceId, maxRecordsPerTransaction: 4, retry: SANDBOX_RETRY, timeoutMs: 180_000 + verifier.options.referenceRuns * (verifier.options.timeoutMs + 20_000), accept, sessionTimeoutMs, hostAvailable: allAnswer(verifier.options.pool.reachable?.bind(verifier.options.pool), storeAnswers(verifier.options.trees)) },
    async ({ record, signal }) => {
      const verification = await verifier.verify(record.value, signal);
      return [{ topic: 'verifications', key: verification.groupId, value: verification }];
    },
  );
}
