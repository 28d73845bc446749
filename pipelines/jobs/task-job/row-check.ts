import { createHash } from 'node:crypto';
import { describeIssues, errorMessage } from '../../../schemas/index.js';
import type { Split } from './dedup.js';
import { RowFingerprinter, type ComparableRow } from './fingerprint.js';
import { keptBits, MinHasher } from './minhash.js';
import { normaliseCode, normaliseProse } from './normalise.js';
import { RepairTaskRow, SolutionRow, type TestsRequest } from './rows.js';
import type { JobSpec, Mapping } from './spec.js';

/** A source row after mapping, before validation. */
export interface MappedItem {
  readonly source: string;
  readonly row: number;
  readonly fields: Record<string, unknown>;
  readonly tests: TestsRequest | null;
}

/** Where a validated row came from and what the job decided about it. */
interface Placed {
  readonly source: string;
  readonly row: number;
  readonly family: string;
  readonly split: Split;
  readonly priority: number;
}

export interface RepairItem extends Placed {
  readonly task: RepairTaskRow;
}

export interface SolutionItem extends Placed {
  readonly solution: SolutionRow;
}

export type ValidItem = RepairItem | SolutionItem;

/** What checking one row needs of its job: plain data, so a worker thread can be given it. */
export interface RowCheckSettings {
  readonly kind: Mapping['kind'];
  readonly filters: JobSpec['filters'];
  readonly split: JobSpec['split'];
  readonly defaultPriority: number;
  readonly shingleTokens: number;
  readonly signatureSize: number;
}

export function rowCheckSettings(spec: JobSpec, kind: Mapping['kind']): RowCheckSettings {
  return { kind, filters: spec.filters, split: spec.split, defaultPriority: spec.priority.default, shingleTokens: spec.dedup.shingleTokens, signatureSize: spec.dedup.signatureSize };
}

/**
 * One row checked on its own: refused with its reason, or valid with what the job keeps of it in memory
 * (id, first tag, placement, exact-key digest, the kept bits of its MinHash signature) and its spill line
 * (the valid item as JSON). What depends on the rows before it (ids already used, limits.maxRows) is the
 * job's to decide, in row order.
 */
export type CheckedRow =
  | { readonly valid: false; readonly category: string; readonly reason: string }
  | {
      readonly valid: true;
      readonly id: string;
      readonly firstTag: string | undefined;
      readonly family: string;
      readonly split: Split;
      readonly priority: number;
      /** sha256 of the row up to what does not change its meaning (RowFingerprint.digest), copied out of Node's buffer pool so a worker sends 32 bytes, not the pool. */
      readonly digest: Uint8Array;
      readonly kept: Uint8Array;
      readonly line: string;
    };

/** What dedup compares a row by: its description, and its code and tests as Python. */
const comparableOf = (row: RepairTaskRow | SolutionRow): ComparableRow => ({
  prose: [row.description],
  code: ['buggy_source' in row ? row.buggy_source : row.source, row.visible_tests, row.hidden_tests],
});

/** Where a family lands when rows carry no split: a stable hash of the family (or row id) against evalFraction. */
function assignedSplit(key: string, seed: string, evalFraction: number): Split {
  if (evalFraction <= 0) return 'train';
  const draw = createHash('sha256').update(`${seed}\u0000${key}`).digest().readUInt32BE(0) / 2 ** 32;
  return draw < evalFraction ? 'eval' : 'train';
}

function lineCount(code: string): number {
  let lines = code.endsWith('\n') ? 0 : 1;
  for (let at = code.indexOf('\n'); at >= 0; at = code.indexOf('\n', at + 1)) lines++;
  return lines;
}
const TEST_FUNCTION = /^[ \t]*(?:async[ \t]+)?def[ \t]+test_\w*[ \t]*\(/;
/** Test functions defined in a test file. Line by line: a multi-line regex over the whole text backtracks quadratically on long runs of whitespace. */
function hiddenTestCount(tests: string): number {
  let count = 0;
  for (const line of tests.split('\n')) if (TEST_FUNCTION.test(line)) count++;
  return count;
}
const firstIssue = (issues: readonly string[]): string => issues[0]!.split(':')[0]!;
const WANT_EVERY_ID = (): boolean => true;

/** The validate stage's work on one row that needs no other row: zod, the job's filters, normalisation, split, fingerprint and signature. */
export class RowChecker {
  private readonly fingerprinter = new RowFingerprinter();
  private readonly hasher: MinHasher;
  private readonly signature: Uint32Array;
  private readonly idPattern: RegExp | null;
  private readonly excluded: ReadonlySet<string>;

  constructor(private readonly settings: RowCheckSettings) {
    this.hasher = new MinHasher({ shingleTokens: settings.shingleTokens, signatureSize: settings.signatureSize });
    this.signature = new Uint32Array(this.hasher.signatureSize);
    this.idPattern = settings.filters.idPattern === undefined ? null : new RegExp(settings.filters.idPattern);
    this.excluded = new Set(settings.filters.excludeTags);
  }

  check(item: MappedItem): CheckedRow {
    return this.checkWanted(item, WANT_EVERY_ID)!;
  }

  /**
   * As check, but a row that zod and the filters pass is checked no further when `wanted` turns its id
   * down: null. That is the job past limits.maxRows, where a new id is not used and normalising,
   * fingerprinting and signing the row would be wasted.
   */
  checkWanted(item: MappedItem, wanted: (id: string) => boolean): CheckedRow | null {
    const { filters, split: splitting } = this.settings;
    const refuse = (category: string, reason: string): CheckedRow => ({ valid: false, category, reason });
    try {
      const parsed = this.settings.kind === 'repair' ? RepairTaskRow.safeParse(item.fields) : SolutionRow.safeParse(item.fields);
      if (!parsed.success) {
        const issues = describeIssues(parsed.error);
        return refuse(`invalid ${firstIssue(issues)}`, issues.join('; '));
      }
      const row = parsed.data;
      const code = 'buggy_source' in row ? row.buggy_source : row.source;
      const description = normaliseProse(row.description);
      if (description.length < filters.minDescriptionChars) {
        return refuse('description too short', `description has ${description.length} characters, fewer than filters.minDescriptionChars (${filters.minDescriptionChars}): too vague to reward fairly`);
      }
      if (lineCount(code) > filters.maxModuleLines) return refuse('module too long', `module has ${lineCount(code)} lines, more than filters.maxModuleLines (${filters.maxModuleLines})`);
      if (hiddenTestCount(row.hidden_tests) < filters.minHiddenTests) {
        return refuse('too few hidden tests', `hidden tests define ${hiddenTestCount(row.hidden_tests)} test function(s), fewer than filters.minHiddenTests (${filters.minHiddenTests})`);
      }
      if (this.idPattern && !this.idPattern.test(row.id)) return refuse('id not matched', `id ${row.id} does not match filters.idPattern ${filters.idPattern}`);
      const tag = row.tags.find((t) => this.excluded.has(t));
      if (tag !== undefined) return refuse('excluded tag', `tagged "${tag}", which filters.excludeTags excludes`);
      if (!wanted(row.id)) return null;
      const family = row.family ?? row.id;
      const split = row.split ?? assignedSplit(splitting.by === 'family' ? family : row.id, splitting.seed, splitting.evalFraction);
      const priority = row.priority ?? this.settings.defaultPriority;
      const prose = { title: normaliseProse(row.title), description };
      const placed = { source: item.source, row: item.row, family, split, priority };
      const valid: ValidItem =
        'buggy_source' in row
          ? {
              ...placed,
              task: {
                ...row,
                ...prose,
                buggy_source: normaliseCode(row.buggy_source),
                fixed_source: normaliseCode(row.fixed_source),
                visible_tests: normaliseCode(row.visible_tests),
                hidden_tests: normaliseCode(row.hidden_tests),
              },
            }
          : { ...placed, solution: { ...row, ...prose, source: normaliseCode(row.source), visible_tests: normaliseCode(row.visible_tests), hidden_tests: normaliseCode(row.hidden_tests) } };
      // Normalising changes only what the fingerprint ignores, so the valid row's fingerprint is the row's.
      const fingerprint = this.fingerprinter.fingerprint(comparableOf('task' in valid ? valid.task : valid.solution));
      this.hasher.signatureOfTokens(this.fingerprinter.tokens.buffer, fingerprint.tokenCount, this.signature);
      return { valid: true, id: row.id, firstTag: row.tags[0], family, split, priority, digest: new Uint8Array(fingerprint.digest), kept: keptBits(this.signature), line: JSON.stringify(valid) };
    } catch (error) {
      // A row is data: whatever its content makes a check throw is that row's reject, and the job goes on.
      return refuse('cannot be validated', `cannot be validated: ${errorMessage(error).slice(0, 500)}`);
    }
  }
}
