import { ConfigError } from './errors.js';

/**
 * The checks option resolvers make, each refusing a value with a ConfigError that names the option and says what
 * it must be: "LearnerOptions.batchSize must be a whole number >= 1, got 0". `name` is the option as a user finds it
 * (`XOptions.field`, or a file's key).
 */

/** Bounds of a checked number: `min` and `max` inclusive, `above` and `below` exclusive; `unit` is said after "number of". */
export interface NumberRange {
  readonly min?: number;
  readonly max?: number;
  readonly above?: number;
  readonly below?: number;
  readonly unit?: string;
}

/** Strings quoted, lists and objects as JSON, the rest (numbers, NaN, Infinity) as JavaScript writes them. */
function shown(value: unknown): string {
  if (typeof value !== 'string' && (typeof value !== 'object' || value === null)) return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The general check: unless `ok`, a ConfigError "<name> must be <rule>, got <value>". */
export function requireOption(ok: boolean, name: string, rule: string, value: unknown): void {
  if (!ok) throw new ConfigError(`${name} must be ${rule}, got ${shown(value)}`);
}

function rangeRule(range: NumberRange): string {
  const low = range.min !== undefined ? { at: range.min, open: false } : range.above !== undefined ? { at: range.above, open: true } : null;
  const high = range.max !== undefined ? { at: range.max, open: false } : range.below !== undefined ? { at: range.below, open: true } : null;
  if (low && high) return !low.open && !high.open ? ` from ${low.at} to ${high.at}` : ` in ${low.open ? '(' : '['}${low.at}, ${high.at}${high.open ? ')' : ']'}`;
  if (low) return ` ${low.open ? '>' : '>='} ${low.at}`;
  if (high) return ` ${high.open ? '<' : '<='} ${high.at}`;
  return '';
}

function inRange(value: number, range: NumberRange): boolean {
  return (range.min === undefined || value >= range.min) && (range.max === undefined || value <= range.max) && (range.above === undefined || value > range.above) && (range.below === undefined || value < range.below);
}

/** `value` if it is a whole number (a safe integer) within `range`. */
export function wholeNumber(name: string, value: unknown, range: NumberRange = {}): number {
  const ok = typeof value === 'number' && Number.isSafeInteger(value) && inRange(value, range);
  requireOption(ok, name, `a whole number${range.unit ? ` of ${range.unit}` : ''}${rangeRule(range)}`, value);
  return value as number;
}

/** `value` if it is a finite number within `range`. */
export function finiteNumber(name: string, value: unknown, range: NumberRange = {}): number {
  const ok = typeof value === 'number' && Number.isFinite(value) && inRange(value, range);
  requireOption(ok, name, `a number${range.unit ? ` of ${range.unit}` : ''}${rangeRule(range)}`, value);
  return value as number;
}

/** `value` if it is one of `allowed`. */
export function oneOf<const T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  requireOption((allowed as readonly unknown[]).includes(value), name, `one of ${allowed.join(', ')}`, value);
  return value as T;
}
