/**
 * One part of the local stack (Kafka, the schema registry, the Docker engine, sandbox images).
 * `trialrun stack up` runs `ensure` on each in order; `stack down` runs `stop` in reverse.
 */
export interface StackComponent {
  readonly name: string;
  /** Where users reach it, e.g. `localhost:9092`; shown by `stack status`. */
  endpoint(): string;
  /** True when something already answers at the endpoint (ours or the user's). */
  isUp(): Promise<boolean>;
  /**
   * Installs what is missing (idempotent), starts the part when nothing answers, and waits until it does.
   * Returns 'reused' when it was already up, 'started' when this call started it. `log` takes its steps;
   * `stack up` keeps them, with the output of the commands it runs, in the component's set-up log.
   */
  ensure(log: StackLog): Promise<'reused' | 'started'>;
  /** Stops the part only if this project started it (a pid file in the state folder says so). */
  stop(log: StackLog): Promise<'stopped' | 'not-ours' | 'not-running'>;
}

export type StackLog = (message: string) => void;
