import { ConfigError, type HackFlag, type Task, type VerificationSpec } from '../../../schemas/index.js';
import type { Judgement, RunnerFailure } from '../judge.js';
import type { GradingSandboxes } from '../sandboxes.js';
import type { Screened } from '../screening.js';

/** A spec's check, as the schema has it (`VerificationSpec.check`). */
export type Check = VerificationSpec['check'];

/** The ids a task is judged on, or why it cannot be judged (a broken task). */
export interface ExpectedIds {
  readonly ids: string[];
  readonly problem: string | null;
}

/** What a kind is given to work on one task: the task, its check, fresh grading sandboxes and the default budget. */
export interface KindContext<C extends Check = Check> {
  readonly task: Task;
  readonly check: C;
  readonly sandboxes: GradingSandboxes;
  /** `VerifierOptions.timeoutMs`: one run's budget where the check names none of its own. */
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/** A kind's verdict on one final tree, before the RewardSpec turns it into a score. */
export interface KindVerdict {
  readonly judgement: Judgement & {
    /** The share of the judged ids that passed, or a script's own reward. */
    readonly fraction: number;
    /** The ids judged. */
    readonly testsTotal: number;
  };
  /** Set when the runner gave no readable result (see `RunnerFailure`). */
  readonly runnerFailure: RunnerFailure | null;
  readonly imageDigest: string;
}

/**
 * One way of checking an agent's work (a member of `VerificationSpec.check`). The verifier does what is the
 * same for every kind (screening the final files, admission with the reference solution, the RewardSpec, the
 * version); a kind says which checks are its own, what a check of it lacks to run, which ids a task is judged
 * on, and runs and judges one final tree in fresh grading sandboxes. Each kind is one folder under
 * `pipelines/verifier/kinds/`, listed in `VERIFICATION_KINDS`, and passes the contract suite
 * (test/integration/verification-kind-contract.test.ts).
 */
export interface VerificationKind<C extends Check = Check> {
  /** The registered name (`pytest`, `command`, ...). */
  readonly name: string;
  /** Whether a spec's check is this kind's: exactly one registered kind owns each check. */
  owns(check: Check): check is C;
  /** What a check of this kind lacks to be run (the schema leaves some fields optional), or null. */
  problem(check: C): string | null;
  /** Whether a task with no ids to judge is broken even when nothing else is wrong (pytest's collection must find hidden tests). */
  readonly idsRequired: boolean;
  /** The ids a task is judged on: from the spec, or collected from the pristine task. */
  expectedIds(context: KindContext<C>): Promise<ExpectedIds>;
  /**
   * Runs the check against the agent's screened final files in a fresh grading sandbox and judges it: one
   * `TestResult` per expected id, every flag in `flags` (and any the kind finds) scoring 0.
   */
  check(context: KindContext<C>, agent: Screened, flags: readonly HackFlag[], expected: readonly string[]): Promise<KindVerdict>;
}

/** The registered kinds, built from an explicit list (nothing registers itself by being imported). */
export class VerificationKindRegistry {
  private readonly byName: ReadonlyMap<string, VerificationKind>;

  constructor(kinds: readonly VerificationKind[]) {
    const byName = new Map<string, VerificationKind>();
    for (const kind of kinds) {
      if (byName.has(kind.name)) throw new ConfigError(`verification kind "${kind.name}" is listed twice`);
      byName.set(kind.name, kind);
    }
    this.byName = byName;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): VerificationKind {
    const kind = this.byName.get(name);
    if (!kind) throw new ConfigError(`unknown verification kind "${name}"; registered: ${this.names().join(', ') || 'none'}`);
    return kind;
  }

  /** The one kind that owns `check`; a check no kind owns (or two do) is a ConfigError naming it. */
  of(check: Check): VerificationKind {
    const owners = [...this.byName.values()].filter((kind) => kind.owns(check));
    if (owners.length !== 1) {
      const what = `check kind '${check.kind}'${check.kind === 'tests' ? ` with runner '${check.runner}'` : ''}`;
      throw new ConfigError(owners.length === 0 ? `no verification kind runs a ${what}; registered: ${this.names().join(', ')}` : `${what} is claimed by ${owners.map((k) => k.name).join(' and ')}`);
    }
    return owners[0]!;
  }
}
