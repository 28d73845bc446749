import type { SandboxPool } from '../../../../connectors/sandbox/index.js';
import { deriveMutants, mutantId, type MutantStatus } from '../derive.js';
import type { RepairItem, SolutionItem, ValidItem } from '../row-check.js';
import { MUTATION_KINDS } from '../spec.js';
import { Stage, type JobRun } from './stage.js';

export interface KindSurvival {
  readonly tried: number;
  readonly valid: number;
  readonly equivalent: number;
  readonly flaky: number;
  readonly slow: number;
}

export interface DerivationReport {
  readonly problems: number;
  readonly problemsRejected: number;
  readonly candidates: number;
  readonly byKind: Readonly<Record<string, KindSurvival>>;
}

/** The description of a task derived from a problem's solution and specification. */
const DERIVED_DESCRIPTION = (module: string, specification: string): string =>
  `\`${module}\` should implement the specification below, but one single-site slip (a wrong operator, constant, bound, ` +
  `argument order or return value) breaks it. Fix it with a minimal change so the code behaves as specified; ` +
  `\`test_visible.py\` has some of the tests it must pass.\n\n${specification}`;

/** derive: validated single-site mutants of each solution become repair tasks. */
export async function deriveTasks(run: JobRun, survivors: readonly ValidItem[], pool: SandboxPool, image: string): Promise<{ derived: RepairItem[]; derivation: DerivationReport }> {
  const { job, rejects, progress, jobRunId } = run;
  const { spec } = job;
  const derive = spec.derive!;
  const problems = survivors.filter((item): item is SolutionItem => 'solution' in item);
  const deriveStage = new Stage('derive', problems.length);
  const byKind: Record<string, KindSurvival> = Object.fromEntries(derive.kinds.map((kind) => [kind, { tried: 0, valid: 0, equivalent: 0, flaky: 0, slow: 0 }]));
  progress(`deriving repair tasks from ${problems.length} problem(s) in ${derive.sandboxes} sandbox(es)`);
  const results = await deriveMutants(
    problems.map((item) => ({ key: item.solution.id, module: item.solution.module, source: item.solution.source, visibleTests: item.solution.visible_tests, hiddenTests: item.solution.hidden_tests })),
    {
      pool,
      image,
      runId: jobRunId,
      kinds: derive.kinds,
      perProblem: derive.perProblem,
      maxCandidates: derive.maxCandidates,
      runs: derive.runs,
      timeoutMs: derive.timeoutMs,
      sandboxes: derive.sandboxes,
      problemsPerSandbox: derive.problemsPerSandbox,
      seed: derive.seed,
      onProgress: (done, total) => progress(`derived ${done}/${total} problem(s)`),
    },
  );
  const byKey = new Map(problems.map((item) => [item.solution.id, item]));
  let candidatesTotal = 0;
  let problemsRejected = 0;
  const derived: RepairItem[] = [];
  for (const result of results) {
    const problem = byKey.get(result.key)!;
    candidatesTotal += result.candidates;
    if (result.status === 'rejected') {
      problemsRejected++;
      deriveStage.count(`problem: ${result.reason!.split(':')[0]!.replace(/\d+/g, 'N')}`);
      rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `no tasks derived: ${result.reason}`, taskId: problem.solution.id });
      continue;
    }
    if (result.mutants.length === 0) {
      deriveStage.count('problem: no candidate edits');
      rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `no tasks derived: the edit tool lists no edit of the kinds ${derive.kinds.join(', ')}`, taskId: problem.solution.id });
    }
    for (const mutant of result.mutants) {
      const survival = byKind[mutant.edit.kind] as { -readonly [K in keyof KindSurvival]: number };
      survival.tried++;
      survival[mutant.status satisfies MutantStatus]++;
      const id = mutantId(problem.solution.id, mutant.edit);
      if (mutant.status !== 'valid') {
        deriveStage.count(`mutant ${mutant.status}`);
        rejects.add({ source: problem.source, row: problem.row, stage: 'derive', reason: `${mutant.edit.kind} mutant at line ${mutant.edit.line} (${mutant.edit.before} -> ${mutant.edit.after}) rejected: ${mutant.reason}`, taskId: id });
        continue;
      }
      const solution = problem.solution;
      derived.push({
        source: problem.source,
        row: problem.row,
        family: problem.family,
        split: problem.split,
        priority: problem.priority,
        task: {
          id,
          title: `Repair ${solution.title}`,
          description: DERIVED_DESCRIPTION(solution.module, solution.description),
          module: solution.module,
          buggy_source: mutant.source,
          fixed_source: solution.source,
          visible_tests: solution.visible_tests,
          hidden_tests: solution.hidden_tests,
          tags: [mutant.edit.kind, ...solution.tags.filter((tag) => !(MUTATION_KINDS as readonly string[]).includes(tag)), mutant.failedVisible.length > 0 ? 'visible-tests-catch' : 'hidden-tests-only'],
          priority: problem.priority,
          split: problem.split,
          family: problem.family,
        },
      });
    }
  }
  const derivation: DerivationReport = { problems: problems.length, problemsRejected, candidates: candidatesTotal, byKind };
  deriveStage.notes.push(
    `survivors by kind: ${Object.entries(byKind)
      .filter(([, s]) => s.tried > 0)
      .map(([kind, s]) => `${kind} ${s.valid}/${s.tried}`)
      .join(', ')}`,
  );
  run.stages.push(deriveStage.end(derived.length));
  return { derived, derivation };
}
