/**
 * The benchmarks' generated program-repair rows (bench:tasks, bench:dedup): the same rows on every run (every
 * random choice comes from a seeded generator), about 1 KB a row, with the defects a real data set has planted
 * at fixed rates, each row's ground truth known:
 *   - `exact`: a byte-for-byte copy of an earlier row's content under another id;
 *   - `layout`: a copy that differs only in layout (CRLF line ends, spacing inside lines, blank lines,
 *     trailing spaces, doubled spaces in the prose): the same Python tokens;
 *   - `renamed`: a copy whose identifiers (function, parameters, locals, module) were renamed consistently in
 *     the module, the tests and the description, as a copy-and-rename clone is;
 *   - `comment`: a copy with one more comment line in the code;
 *   - `contamination`: a copy placed in the eval split with a new title;
 *   - `broken` (not JSON) and `invalid` (fails the task schema) rows, which no dedup sees.
 * A copy's `origin` is the index of the distinct row whose content it copies (`distinctRow(origin)`); the row
 * at that index may itself be a copy, so a cluster is "every valid row with one origin", whichever of them is
 * in the file. Every other row is `distinct`, its own origin.
 */
import { seededRandom } from '../policies/index.js';

export interface GeneratedRow {
  id: string;
  title: string;
  description: string;
  module: string;
  buggy_source: string;
  fixed_source: string;
  visible_tests: string;
  hidden_tests: string;
  tags: string[];
  priority: number;
  split: 'train' | 'eval';
}

export type PlantedKind = 'distinct' | 'exact' | 'layout' | 'renamed' | 'comment' | 'contamination' | 'broken' | 'invalid';
/** The kinds that are copies of an earlier row: one row of each cluster should stay, the rest be dropped. */
export const COPY_KINDS: readonly PlantedKind[] = ['exact', 'layout', 'renamed', 'comment', 'contamination'];

export interface PlantedRow {
  /** The JSON line (not JSON at all for `broken`). */
  readonly line: string;
  readonly kind: PlantedKind;
  /** Index of the distinct row whose content this row carries. */
  readonly origin: number;
}

export interface GeneratorOptions {
  /** Plant broken and schema-invalid rows (bench:tasks); bench:dedup leaves them out, as no dedup sees them. @default true */
  readonly invalidRows?: boolean;
}

const prng = (seed: number): (() => number) => seededRandom(String(seed));

const SYLLABLES = 'ka lo mi su ne ra to vi pe du xa ze bo fi gu ha jo ly qu wi'.split(' ');
const WORDS = Array.from({ length: 6000 }, (_, i) => {
  const random = prng(i + 1);
  const length = 2 + Math.floor(random() * 3);
  return Array.from({ length }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join('');
});

const OPS = ['<', '<=', '>', '>=', '==', '!='];
const KINDS = ['compare-op', 'arith-op', 'off-by-one', 'range-bound', 'negation'];

/** The consistent new name a renamed copy gives an identifier word: no generated word ends in `x_v2`. */
const renamedWord = (word: string): string => `${[...word].reverse().join('')}x_v2`;

/**
 * One distinct, plausible repair task: a few statements over random names, one operator slipped. With
 * `renamed`, every identifier (and only identifiers) is renamed consistently; the random draws are the same.
 */
export function distinctRow(index: number, renamed = false): GeneratedRow {
  const random = prng(index * 7919 + 17);
  const word = (): string => WORDS[Math.floor(random() * WORDS.length)]!;
  const name = (): string => (renamed ? renamedWord(word()) : word());
  const int = (limit: number): number => Math.floor(random() * limit);
  const fn = `${name()}_${name()}`;
  const [a, b, acc, item] = [name(), name(), name(), name()];
  const statements = [
    `    ${acc} = ${int(9)}`,
    `    for ${item} in ${a}:`,
    `        if ${item} ${OPS[int(OPS.length)]} ${b}:`,
    `            ${acc} += ${item} * ${1 + int(5)}`,
    ...Array.from({ length: 1 + int(4) }, () => `    ${name()} = ${acc} ${['+', '-', '*', '//'][int(4)]} ${1 + int(20)}`),
    `    return ${acc}`,
  ];
  const fixed = `def ${fn}(${a}: list[int], ${b}: int) -> int:\n    """${word()} ${word()} ${word()} of ${a} against ${b}."""\n${statements.join('\n')}\n`;
  const buggy = fixed.replace(`${acc} += ${item}`, `${acc} -= ${item}`);
  const asserts = Array.from({ length: 2 + int(3) }, () => `    assert ${fn}([${int(50)}, ${int(50)}, ${int(50)}], ${int(50)}) == ${int(500)}`);
  const module = `${name()}_${name()}.py`;
  const importLine = `from ${module.slice(0, -3)} import ${fn}\n\n\n`;
  return {
    id: `gen-${index}`,
    title: `${word()} ${word()} ${word()}`,
    description: `\`${fn}\` ${Array.from({ length: 12 + int(14) }, word).join(' ')}. The module \`${module}\` has one bug.`,
    module,
    buggy_source: buggy,
    fixed_source: fixed,
    visible_tests: `${importLine}def test_visible_${word()}():\n${asserts[0]}\n`,
    hidden_tests: `${importLine}${asserts.map((line, i) => `def test_hidden_${i}():\n${line}\n`).join('\n\n')}`,
    tags: [KINDS[int(KINDS.length)]!],
    priority: int(3),
    split: random() < 0.1 ? 'eval' : 'train',
  };
}

/** The same Python laid out differently: CRLF, no spaces around `=` and after commas, a blank line after each `def`, trailing spaces. */
function relaidCode(code: string): string {
  return code
    .split('\n')
    .map((line) => line.replaceAll(' = ', '=').replaceAll(', ', ',').replace(/^(def .*:)$/, '$1\n'))
    .map((line) => (line.length > 0 ? `${line}  ` : line))
    .join('\r\n');
}

/** Row `index` of the data set with its ground truth: mostly distinct rows, the planted kinds at fixed rates. */
export function plantedRow(index: number, options: GeneratorOptions = {}): PlantedRow {
  const invalidRows = options.invalidRows ?? true;
  const roll = prng(index * 31 + 5)();
  const earlier = index > 100 ? Math.floor(prng(index)() * (index - 1)) : -1;
  const copy = (kind: PlantedKind, row: GeneratedRow): PlantedRow => ({ line: JSON.stringify({ ...row, id: `gen-${index}` }), kind, origin: earlier });
  if (invalidRows && roll < 0.005) return { line: `{"id": "broken-${index}", "title": `, kind: 'broken', origin: index };
  if (invalidRows && roll < 0.01) return { line: JSON.stringify({ ...distinctRow(index), id: `Invalid Id ${index}` }), kind: 'invalid', origin: index };
  if (earlier >= 0 && roll < 0.02) return copy('exact', distinctRow(earlier));
  if (earlier >= 0 && roll < 0.03) {
    const original = distinctRow(earlier);
    const code = { buggy_source: relaidCode(original.buggy_source), visible_tests: relaidCode(original.visible_tests), hidden_tests: relaidCode(original.hidden_tests) };
    return copy('layout', { ...original, ...code, description: original.description.replaceAll(' ', '  ') });
  }
  if (earlier >= 0 && roll < 0.04) return copy('renamed', distinctRow(earlier, true));
  if (earlier >= 0 && roll < 0.05) {
    const original = distinctRow(earlier);
    return copy('comment', { ...original, buggy_source: `${original.buggy_source}    # unused: ${index}\n` });
  }
  if (earlier >= 0 && roll < 0.053) return copy('contamination', { ...distinctRow(earlier), split: 'eval', title: `held out ${index}` });
  return { line: JSON.stringify(distinctRow(index)), kind: 'distinct', origin: index };
}

/** Row `index`'s JSON line (see `plantedRow`). */
export const generatedLine = (index: number, options: GeneratorOptions = {}): string => plantedRow(index, options).line;

/** A row's ground truth: what was planted, and the distinct row whose content it carries. */
export interface Truth {
  readonly kind: PlantedKind;
  readonly origin: number;
}

export interface Quality {
  readonly removed: number;
  readonly precision: number;
  readonly recall: number;
  /** Per planted copy kind: the fraction of clusters of one original and one copy of that kind that lost a row. */
  readonly recallByKind: Readonly<Record<string, number>>;
}

/**
 * Scores removed row ids against the truth: a cluster of n rows sharing an origin should lose n - 1 of them.
 * Removals up to n - 1 in a cluster are right; any beyond, and any from a row with no copy, are wrong.
 */
export function scoreRemoved(truth: ReadonlyMap<string, Truth>, removedIds: readonly string[]): Quality {
  const members = new Map<number, string[]>();
  for (const [id, { origin }] of truth) {
    const list = members.get(origin);
    if (list) list.push(id);
    else members.set(origin, [id]);
  }
  const removedByOrigin = new Map<number, number>();
  const removedSet = new Set(removedIds);
  for (const id of removedSet) {
    const row = truth.get(id);
    if (!row) throw new Error(`a side removed ${id}, which is not in the data set`);
    removedByOrigin.set(row.origin, (removedByOrigin.get(row.origin) ?? 0) + 1);
  }
  let right = 0;
  let shouldGo = 0;
  const pairs: Record<string, { clusters: number; found: number }> = {};
  for (const [origin, ids] of members) {
    const removed = removedByOrigin.get(origin) ?? 0;
    shouldGo += ids.length - 1;
    right += Math.min(removed, ids.length - 1);
    if (ids.length === 2) {
      const kinds = ids.map((id) => truth.get(id)!.kind);
      const copyKind = kinds.find((kind) => kind !== 'distinct');
      if (kinds.includes('distinct') && copyKind) {
        pairs[copyKind] ??= { clusters: 0, found: 0 };
        pairs[copyKind].clusters++;
        if (removed > 0) pairs[copyKind].found++;
      }
    }
  }
  const recallByKind = Object.fromEntries(COPY_KINDS.filter((kind) => pairs[kind]).map((kind) => [kind, pairs[kind]!.found / pairs[kind]!.clusters]));
  return { removed: removedSet.size, precision: removedSet.size === 0 ? 1 : right / removedSet.size, recall: shouldGo === 0 ? 1 : right / shouldGo, recallByKind };
}

