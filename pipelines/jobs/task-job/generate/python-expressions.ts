import { drawFrom, WORDS, type Draw, type JsonValue } from './values.js';

/** The input a template's expression reads: its variable's name, how the prompt describes it, and how its hidden values are drawn. */
interface InputKind {
  readonly variable: string;
  readonly described: string;
  readonly draw: (draw: Draw) => JsonValue;
}

const INTS: InputKind = { variable: 'xs', described: '`xs` is a list of integers', draw: (d) => Array.from({ length: d.int(4, 8) }, () => d.int(-9, 30)) };
const WORDS_STRING: InputKind = { variable: 's', described: '`s` is a string of lower-case words separated by single spaces', draw: (d) => Array.from({ length: d.int(3, 6) }, () => d.pick(WORDS)).join(' ') };
const NATURAL: InputKind = { variable: 'n', described: '`n` is a non-negative integer', draw: (d) => d.int(0, 99_999) };
const SCORES: InputKind = {
  variable: 'd',
  described: '`d` is a dictionary that maps words to integers',
  // Distinct values, so "the key with the largest value" has one answer.
  draw: (d) => {
    const keys = d.distinct(WORDS, d.int(3, 5));
    const values = d.distinct(Array.from({ length: 60 }, (_, i) => i - 10), keys.length);
    return Object.fromEntries(keys.map((key, i) => [key, values[i]!]));
  },
};

type Params = Readonly<Record<string, number | string>>;

/** One template: what is asked, the reference expression, and the value it must produce, for drawn parameters. */
export interface ExpressionTemplate {
  readonly name: string;
  readonly input: InputKind;
  readonly params: (draw: Draw) => Params;
  /** What the expression evaluates to, completing "Write one Python expression that evaluates to ...". */
  readonly ask: (p: Params) => string;
  /** A Python expression that does it (the task's reference solution). */
  readonly reference: (p: Params) => string;
  /** Its value on an input, computed here: calibration checks that the reference agrees on every case. */
  readonly expected: (input: JsonValue, p: Params) => JsonValue;
}

const ints = (value: JsonValue): number[] => value as number[];
const text = (value: JsonValue): string => value as string;
const dict = (value: JsonValue): Record<string, number> => value as Record<string, number>;
const none = (): Params => ({});
const k = (min: number, max: number) => (d: Draw): Params => ({ k: d.int(min, max) });
const letter = (d: Draw): Params => ({ c: d.pick('aeiornt'.split('')) });
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
/** Python's `%`: the result takes the divisor's sign. */
const mod = (a: number, b: number): number => ((a % b) + b) % b;

const template = (name: string, input: InputKind, params: (d: Draw) => Params, ask: ExpressionTemplate['ask'], reference: ExpressionTemplate['reference'], expected: ExpressionTemplate['expected']): ExpressionTemplate => ({ name, input, params, ask, reference, expected });

export const EXPRESSION_TEMPLATES: readonly ExpressionTemplate[] = [
  template('sum-above', INTS, k(0, 10), (p) => `the sum of the numbers in xs that are greater than ${p.k}`, (p) => `sum(x for x in xs if x > ${p.k})`, (v, p) => sum(ints(v).filter((x) => x > Number(p.k)))),
  template('count-divisible', INTS, k(2, 5), (p) => `how many numbers in xs are divisible by ${p.k}`, (p) => `sum(1 for x in xs if x % ${p.k} == 0)`, (v, p) => ints(v).filter((x) => mod(x, Number(p.k)) === 0).length),
  template('scale', INTS, k(2, 9), (p) => `a list of every number in xs multiplied by ${p.k}`, (p) => `[x * ${p.k} for x in xs]`, (v, p) => ints(v).map((x) => x * Number(p.k))),
  template('shift', INTS, k(1, 9), (p) => `a list of every number in xs plus ${p.k}`, (p) => `[x + ${p.k} for x in xs]`, (v, p) => ints(v).map((x) => x + Number(p.k))),
  template('first-k', INTS, k(1, 3), (p) => `a list of the first ${p.k} numbers of xs`, (p) => `xs[:${p.k}]`, (v, p) => ints(v).slice(0, Number(p.k))),
  template('last-k', INTS, k(1, 3), (p) => `a list of the last ${p.k} numbers of xs`, (p) => `xs[-${p.k}:]`, (v, p) => ints(v).slice(-Number(p.k))),
  template('max-plus', INTS, k(1, 9), (p) => `the largest number in xs plus ${p.k}`, (p) => `max(xs) + ${p.k}`, (v, p) => Math.max(...ints(v)) + Number(p.k)),
  template('min-times', INTS, k(2, 5), (p) => `the smallest number in xs times ${p.k}`, (p) => `min(xs) * ${p.k}`, (v, p) => Math.min(...ints(v)) * Number(p.k)),
  template('evens', INTS, none, () => 'a list of the even numbers in xs, in their order', () => '[x for x in xs if x % 2 == 0]', (v) => ints(v).filter((x) => mod(x, 2) === 0)),
  template('sum-squares', INTS, none, () => 'the sum of the squares of the numbers in xs', () => 'sum(x * x for x in xs)', (v) => sum(ints(v).map((x) => x * x))),
  template('sorted-desc', INTS, none, () => 'a list of the numbers in xs sorted from largest to smallest', () => 'sorted(xs, reverse=True)', (v) => [...ints(v)].sort((a, b) => b - a)),
  template('distinct-count', INTS, none, () => 'the number of distinct values in xs', () => 'len(set(xs))', (v) => new Set(ints(v)).size),
  template('span', INTS, none, () => 'the largest number in xs minus the smallest', () => 'max(xs) - min(xs)', (v) => Math.max(...ints(v)) - Math.min(...ints(v))),
  template('count-below', INTS, k(0, 10), (p) => `how many numbers in xs are less than ${p.k}`, (p) => `sum(1 for x in xs if x < ${p.k})`, (v, p) => ints(v).filter((x) => x < Number(p.k)).length),
  template('abs-sum', INTS, none, () => 'the sum of the absolute values of the numbers in xs', () => 'sum(abs(x) for x in xs)', (v) => sum(ints(v).map((x) => Math.abs(x)))),
  template('upper', WORDS_STRING, none, () => 's in upper case', () => 's.upper()', (v) => text(v).toUpperCase()),
  template('word-count', WORDS_STRING, none, () => 'the number of words in s', () => 'len(s.split())', (v) => text(v).split(' ').length),
  template('reverse', WORDS_STRING, none, () => 's reversed, character by character', () => 's[::-1]', (v) => [...text(v)].reverse().join('')),
  template('first-word', WORDS_STRING, none, () => 'the first word of s', () => 's.split()[0]', (v) => text(v).split(' ')[0]!),
  template('last-word', WORDS_STRING, none, () => 'the last word of s', () => 's.split()[-1]', (v) => text(v).split(' ').at(-1)!),
  template('count-letter', WORDS_STRING, letter, (p) => `how many times the letter "${p.c}" occurs in s`, (p) => `s.count("${p.c}")`, (v, p) => text(v).split(String(p.c)).length - 1),
  template('long-words', WORDS_STRING, k(4, 5), (p) => `a list of the words of s that are longer than ${p.k} letters, in their order`, (p) => `[w for w in s.split() if len(w) > ${p.k}]`, (v, p) => text(v).split(' ').filter((w) => w.length > Number(p.k))),
  template('word-lengths', WORDS_STRING, none, () => 'a list of the lengths of the words of s, in their order', () => '[len(w) for w in s.split()]', (v) => text(v).split(' ').map((w) => w.length)),
  template('without-letter', WORDS_STRING, letter, (p) => `s with every "${p.c}" removed`, (p) => `s.replace("${p.c}", "")`, (v, p) => text(v).split(String(p.c)).join('')),
  template('digit-sum', NATURAL, none, () => 'the sum of the decimal digits of n', () => 'sum(int(c) for c in str(n))', (v) => sum([...String(v)].map(Number))),
  template('is-multiple', NATURAL, k(3, 9), (p) => `True when n is a multiple of ${p.k}, else False`, (p) => `n % ${p.k} == 0`, (v, p) => mod(v as number, Number(p.k)) === 0),
  template('digit-count', NATURAL, none, () => 'the number of decimal digits of n', () => 'len(str(n))', (v) => String(v).length),
  template('last-digits', NATURAL, k(1, 2), (p) => `the last ${p.k} decimal digit${p.k === 1 ? '' : 's'} of n as a number (n modulo ${10 ** Number(p.k)})`, (p) => `n % ${10 ** Number(p.k)}`, (v, p) => mod(v as number, 10 ** Number(p.k))),
  template('value-sum', SCORES, none, () => 'the sum of the values of d', () => 'sum(d.values())', (v) => sum(Object.values(dict(v)))),
  template('sorted-keys', SCORES, none, () => 'a list of the keys of d in alphabetical order', () => 'sorted(d)', (v) => Object.keys(dict(v)).sort()),
  template('max-key', SCORES, none, () => 'the key of d whose value is the largest', () => 'max(d, key=d.get)', (v) => Object.entries(dict(v)).reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0]),
  template('keys-above', SCORES, k(0, 20), (p) => `a list of the keys of d whose value is greater than ${p.k}, in alphabetical order`, (p) => `sorted(key for key, value in d.items() if value > ${p.k})`, (v, p) => Object.entries(dict(v)).filter(([, value]) => value > Number(p.k)).map(([key]) => key).sort()),
];

/** Hidden inputs per task: partial credit moves in steps of 0.2 with the validity check. */
export const EXPRESSION_CASES = 4;

/** One generated expression task, before it becomes a Task: the prompt, the hidden cases with their expected values, the reference reply. */
export interface ExpressionTask {
  readonly template: string;
  readonly prompt: string;
  readonly variable: string;
  readonly cases: readonly JsonValue[];
  readonly expected: readonly JsonValue[];
  readonly reference: string;
}

export function expressionTask(template: ExpressionTemplate, random: () => number): ExpressionTask {
  const draw = drawFrom(random);
  const params = template.params(draw);
  const cases = Array.from({ length: EXPRESSION_CASES }, () => template.input.draw(draw));
  return {
    template: template.name,
    prompt: `${template.input.described}. Write one Python expression that evaluates to ${template.ask(params)}. Reply with the expression only.`,
    variable: template.input.variable,
    cases,
    expected: cases.map((value) => template.expected(value, params)),
    reference: template.reference(params),
  };
}
