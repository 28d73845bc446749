/** Seeded draws for generated tasks: every value a task holds comes from its own stream, so a job regenerates it exactly. */
export interface Draw {
  /** A whole number in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** `count` distinct items, in the order drawn. */
  distinct<T>(items: readonly T[], count: number): T[];
}

export function drawFrom(random: () => number): Draw {
  const int = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
  return {
    int,
    pick: (items) => items[int(0, items.length - 1)]!,
    distinct: (items, count) => {
      const pool = [...items];
      const drawn = [];
      for (let i = 0; i < count && pool.length > 0; i++) drawn.push(pool.splice(int(0, pool.length - 1), 1)[0]!);
      return drawn;
    },
  };
}

/** A value both JSON and Python's json module write the same way (no floats: 2.0 and 2 would differ in text). */
export type JsonValue = number | string | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Short lower-case words for string inputs and document values. */
export const WORDS = [
  'apple', 'river', 'stone', 'cloud', 'tiger', 'lamp', 'green', 'quick', 'ocean', 'paper', 'music', 'bread', 'north', 'light', 'candle', 'forest',
  'silver', 'orange', 'table', 'window', 'garden', 'rocket', 'pencil', 'planet', 'yellow', 'bridge', 'castle', 'dragon', 'honey', 'island', 'jacket', 'kitten',
] as const;
