/**
 * Bounds on structured text an agent produced (a file an output check reads, a JUnit report, a tool call's
 * arguments): whatever it wrote, reading it costs bounded bytes, stack and memory, and a value past a bound is a
 * failed check or a refused call saying which bound, never an exception that reaches the process.
 */
export interface ParseBounds {
  /** Longest text parsed, in UTF-8 bytes. */
  readonly maxBytes: number;
  /** Deepest nesting of arrays and objects in the parsed value (recursive code downstream, a JSON Schema validator, walks it). */
  readonly maxDepth: number;
  /**
   * Most values (scalars, arrays, objects) the parsed value holds, counted as walked: a YAML alias counts its whole
   * target again at each use, so a "billion laughs" document is refused however small its text.
   */
  readonly maxNodes: number;
}

/** For files and reports an agent's code wrote (read back at most 16 MiB). */
export const AGENT_OUTPUT_BOUNDS: ParseBounds = { maxBytes: 16 * 1024 * 1024, maxDepth: 128, maxNodes: 1_000_000 };

/** For one tool call's arguments from a model. */
export const TOOL_ARGUMENT_BOUNDS: ParseBounds = { maxBytes: 1024 * 1024, maxDepth: 32, maxNodes: 100_000 };

/** Why `text` is too long to parse under `bounds`, or null. */
export function textBoundsProblem(text: string, bounds: ParseBounds): string | null {
  // A string's UTF-8 size is at most 3 bytes per UTF-16 unit: skip counting when it cannot be over.
  if (text.length * 3 <= bounds.maxBytes) return null;
  const bytes = Buffer.byteLength(text);
  return bytes > bounds.maxBytes ? `it is ${bytes} bytes, above the ${bounds.maxBytes} bytes read` : null;
}

/**
 * Why a parsed value breaks `bounds` (nesting deeper than maxDepth, more than maxNodes values as walked), or null.
 * Walks with its own stack, never recursion, and stops at the first bound broken.
 */
export function valueBoundsProblem(value: unknown, bounds: ParseBounds): string | null {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (++nodes > bounds.maxNodes) return `it holds more than ${bounds.maxNodes} values (aliases counted at each use)`;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= bounds.maxDepth) return `it nests deeper than ${bounds.maxDepth} levels`;
    const children = Array.isArray(current) ? current : Object.values(current as Record<string, unknown>);
    for (const child of children) stack.push({ value: child, depth: depth + 1 });
  }
  return null;
}

export type BoundedParse = { readonly value: unknown } | { readonly problem: string };

/** Parses `text` as JSON within `bounds`: the value, or why it was refused (too long, not JSON, too deep, too many values). */
export function parseJsonBounded(text: string, bounds: ParseBounds): BoundedParse {
  return parseBounded(text, bounds, (source) => JSON.parse(source) as unknown);
}

/**
 * Runs `parse` on `text` within `bounds`: the text's size first, then the parser (any error it throws, a stack
 * overflow on deep nesting included, is a problem), then the value's depth and size.
 */
export function parseBounded(text: string, bounds: ParseBounds, parse: (text: string) => unknown): BoundedParse {
  const long = textBoundsProblem(text, bounds);
  if (long !== null) return { problem: long };
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    const message = error instanceof RangeError ? 'it nests too deeply to parse' : error instanceof Error ? error.message.split('\n')[0]! : String(error);
    return { problem: message };
  }
  const problem = valueBoundsProblem(value, bounds);
  return problem === null ? { value } : { problem };
}
