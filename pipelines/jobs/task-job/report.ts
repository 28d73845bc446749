import { basename } from 'node:path';
import type { DuplicateRecord, TaskJobReport } from './job.js';

const pad = (text: string | number, width: number): string => String(text).padStart(width);

/** Dropped rows listed with the row each duplicates; more than this are counted, and all are in the rejects file. */
const LISTED_DUPLICATES = 20;

const VERB: Record<DuplicateRecord['category'], string> = {
  'exact duplicate': 'exact copy of',
  'near duplicate': 'near copy of',
  contamination: 'near copy across the split of',
};

function duplicateLines(duplicates: readonly DuplicateRecord[]): string[] {
  const where = (entry: { source: string; row: number; taskId: string }): string => `${basename(entry.source)}:${entry.row} ${entry.taskId}`;
  const lines = duplicates.slice(0, LISTED_DUPLICATES).map((d) => `  dropped ${where(d)}  ${VERB[d.category]}  ${where(d.of)}${d.category === 'exact duplicate' ? '' : ` (similarity ${d.similarity.toFixed(2)})`}`);
  if (duplicates.length > LISTED_DUPLICATES) lines.push(`  ... and ${duplicates.length - LISTED_DUPLICATES} more (every one is in the rejects file)`);
  return lines;
}

/** The report a person reads after `trialrun tasks publish` (with or without --dry-run). */
export function formatReport(report: TaskJobReport): string {
  const lines: string[] = [];
  lines.push(`job run      ${report.jobRunId}${report.dryRun ? '  (dry run: nothing published)' : ''}`);
  lines.push(`dataset      ${report.dataset} (sha256 ${report.datasetHash.slice(0, 16)}...)`);
  lines.push('');
  lines.push(`${'stage'.padEnd(12)}${pad('rows in', 10)}${pad('rows out', 10)}${pad('rows/s', 10)}${pad('seconds', 9)}  rejects by reason; notes`);
  for (const stage of report.stages) {
    const perSecond = stage.seconds > 0 ? stage.rowsIn / stage.seconds : 0;
    const rate = perSecond >= 10 ? Math.round(perSecond) : perSecond.toFixed(1);
    const rejects = Object.entries(stage.rejects)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, count]) => `${reason} ${count}`);
    const detail = [...rejects, ...stage.notes].join('; ');
    lines.push(`${stage.stage.padEnd(12)}${pad(stage.rowsIn, 10)}${pad(stage.rowsOut, 10)}${pad(rate, 10)}${pad(stage.seconds.toFixed(2), 9)}  ${detail}`);
  }
  lines.push('');
  lines.push(`duplicates   ${report.exactDuplicates} exact, ${report.nearDuplicates} near; contamination hits ${report.contaminationHits}`);
  lines.push(...duplicateLines(report.duplicates));
  if (report.derivation) {
    const d = report.derivation;
    lines.push(`derivation   ${d.problems} problem(s), ${d.problemsRejected} rejected, ${d.candidates} candidate edit(s)`);
    lines.push(`  ${'kind'.padEnd(14)}${pad('tried', 7)}${pad('valid', 7)}${pad('equiv', 7)}${pad('flaky', 7)}${pad('slow', 7)}`);
    for (const [kind, s] of Object.entries(d.byKind)) lines.push(`  ${kind.padEnd(14)}${pad(s.tried, 7)}${pad(s.valid, 7)}${pad(s.equivalent, 7)}${pad(s.flaky, 7)}${pad(s.slow, 7)}`);
  }
  lines.push(`buckets      ${report.buckets.map((b) => `${b.bucket} ${b.selected}/${b.available}${b.parked ? ` (+${b.parked} parked)` : ''}`).join(', ')}  (selected/available)`);
  lines.push(`curriculum   ${report.coldStart} cold start, ${report.parked} parked, ${report.deferred} deferred by the mix`);
  lines.push(
    report.publish
      ? `published    ${report.publish.added} new, ${report.publish.updated} updated, ${report.publish.unchanged} unchanged (already on ${report.publish.topic})`
      : `published    nothing (dry run); ${report.taskCount} task(s) would be offered`,
  );
  lines.push(`rejects      ${report.rejected} row(s) in ${report.rejectsFile}`);
  lines.push(`total        ${report.seconds.toFixed(1)} s`);
  return lines.join('\n');
}
