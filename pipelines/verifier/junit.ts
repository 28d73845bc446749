import type { TestOutcome } from '../../schemas/index.js';

export interface JunitCase {
  /** pytest node id, e.g. `test_hidden.py::TestX::test_y[1]`. */
  readonly id: string;
  readonly outcome: Exclude<TestOutcome, 'missing'>;
  readonly durationMs: number;
  readonly message: string | null;
}

const decode = (text: string): string =>
  text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n))).replace(/&amp;/g, '&');

function attribute(tag: string, name: string): string | null {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return match ? decode(match[1]!) : null;
}

/** pytest writes `classname="test_mod.TestClass"`, `name="test_x[param]"`; node ids use `test_mod.py::TestClass::test_x[param]`. */
export function nodeId(classname: string, name: string): string {
  const [module, ...classes] = classname.split('.');
  return [`${module}.py`, ...classes, name].join('::');
}

/**
 * Parses pytest's JUnit XML (the structure pytest writes; not a general XML parser). A report that does
 * not look like one yields null, which the verifier scores as a failure to verify.
 */
export function parseJunit(xml: string): JunitCase[] | null {
  if (!/<testsuites?[\s>]/.test(xml)) return null;
  const cases: JunitCase[] = [];
  for (const match of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const head = match[1]!;
    const body = match[3] ?? '';
    const classname = attribute(head, 'classname');
    const name = attribute(head, 'name');
    if (classname === null || name === null) continue;
    const child = /<(failure|error|skipped)\b([^>]*)/.exec(body);
    const outcome = child ? ({ failure: 'failed', error: 'error', skipped: 'skipped' } as const)[child[1] as 'failure' | 'error' | 'skipped'] : 'passed';
    cases.push({
      id: nodeId(classname, name),
      outcome,
      durationMs: Math.round(Number(attribute(head, 'time') ?? 0) * 1000),
      message: child ? attribute(`<x${child[2]!}>`, 'message') : null,
    });
  }
  return cases;
}
