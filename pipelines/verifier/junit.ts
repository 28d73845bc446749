import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { AGENT_OUTPUT_BOUNDS, textBoundsProblem, type TestOutcome } from '../../schemas/index.js';

export interface JunitCase {
  /** The test's id: a pytest node id (`tests/test_x.py::TestX::test_y[1]`) or `classname::name` for other runners. */
  readonly id: string;
  readonly outcome: Exclude<TestOutcome, 'missing'>;
  readonly durationMs: number;
  readonly message: string | null;
}

/**
 * How test ids are made from a report's testcases. `pytest`: node ids, from the `file` attribute pytest's xunit1
 * family writes, else by matching the classname against the run's test modules (`modules`); `generic`: the
 * `classname::name` of any other runner (jest-junit, go-junit-report, ...), or the name alone without a classname.
 */
export type JunitIds = { readonly style: 'pytest'; readonly modules?: readonly string[] } | { readonly style: 'generic' };

const PYTEST_IDS: JunitIds = { style: 'pytest' };

type XmlNode = Record<string, unknown>;

// Elements that may repeat are always arrays, so a report with one testcase reads like one with many.
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  textNodeName: '#text',
  isArray: (name) => ['testsuite', 'testcase', 'failure', 'error', 'skipped'].includes(name),
  parseAttributeValue: false,
  parseTagValue: false,
  processEntities: true,
  htmlEntities: true,
});

const text = (node: XmlNode, attribute: string): string | null => {
  const value = node[`@${attribute}`];
  return typeof value === 'string' ? value : null;
};

/** `tests/test_x.py` as the dotted module pytest puts in classnames: `tests.test_x`. */
const dottedModule = (path: string): string => path.replace(/\.py$/, '').split('/').join('.');

/**
 * pytest writes `classname="tests.test_x.TestClass"`, `name="test_y[param]"` (and, in xunit1, `file="tests/test_x.py"`);
 * the node id is `tests/test_x.py::TestClass::test_y[param]`. The module part of a dotted classname is ambiguous
 * (`a.b` may be a folder and a module, or a module and a class), so the file, or the run's own module list, decides.
 */
export function nodeId(classname: string, name: string, file: string | null = null, modules: readonly string[] = []): string {
  // The file first; a test inherited from another module names where it was defined, so the modules come next.
  const candidates = [...(file !== null ? [file] : []), ...[...modules].sort((a, b) => b.length - a.length)];
  for (const module of candidates) {
    const dotted = dottedModule(module);
    if (classname === dotted) return `${module}::${name}`;
    if (classname.startsWith(`${dotted}.`)) return [module, ...classname.slice(dotted.length + 1).split('.'), name].join('::');
  }
  // A root-level module: the first dotted part is the module, the rest classes.
  const [module, ...classes] = classname.split('.');
  return [`${module}.py`, ...classes, name].join('::');
}

/** Deepest nesting of testsuites read (jest nests a few; a report nested deeper is refused). */
export const MAX_SUITE_DEPTH = 64;
/** Most testcases one report may hold. */
export const MAX_TESTCASES = 100_000;
/** Longest failure message kept per testcase. */
export const MAX_CASE_MESSAGE_CHARS = 2000;

/**
 * Every testcase under a node, at any depth of nested testsuites (jest and others nest them), walked with its own
 * stack; null when the suites nest deeper than MAX_SUITE_DEPTH or hold more than MAX_TESTCASES testcases.
 */
function collectCases(root: XmlNode): XmlNode[] | null {
  const out: XmlNode[] = [];
  const stack: Array<{ node: XmlNode; depth: number }> = [{ node: root, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > MAX_SUITE_DEPTH) return null;
    for (const child of (node.testcase as XmlNode[] | undefined) ?? []) if (typeof child === 'object' && child !== null) out.push(child);
    if (out.length > MAX_TESTCASES) return null;
    // Pushed in reverse, so suites are walked in document order.
    const suites = ((node.testsuite as XmlNode[] | undefined) ?? []).filter((suite) => typeof suite === 'object' && suite !== null);
    for (const suite of suites.reverse()) stack.push({ node: suite, depth: depth + 1 });
  }
  return out;
}

function outcomeOf(testcase: XmlNode): { outcome: JunitCase['outcome']; message: string | null } {
  for (const [element, outcome] of [['failure', 'failed'], ['error', 'error'], ['skipped', 'skipped']] as const) {
    const found = testcase[element] as unknown[] | undefined;
    if (!found || found.length === 0) continue;
    const first = found[0];
    const message = typeof first === 'object' && first !== null ? text(first as XmlNode, 'message')?.slice(0, MAX_CASE_MESSAGE_CHARS) ?? null : null;
    return { outcome, message };
  }
  return { outcome: 'passed', message: null };
}

/**
 * Parses a JUnit XML report with a real XML parser. A report that is not well-formed XML, or has no
 * `testsuites`/`testsuite` root, yields null, which the verifier scores as a failure to verify; so does one past a
 * bound: above AGENT_OUTPUT_BOUNDS.maxBytes, with a DOCTYPE (no runner writes one, and its entities are how an XML
 * document expands), nested too deeply to parse or past MAX_SUITE_DEPTH, or with more than MAX_TESTCASES testcases.
 */
export function parseJunit(xml: string, ids: JunitIds = PYTEST_IDS): JunitCase[] | null {
  if (textBoundsProblem(xml, AGENT_OUTPUT_BOUNDS) !== null || /<!DOCTYPE/i.test(xml)) return null;
  let document: XmlNode;
  try {
    if (XMLValidator.validate(xml) !== true) return null;
    document = parser.parse(xml) as XmlNode;
  } catch {
    // A stack overflow on deep nesting included.
    return null;
  }
  const roots: XmlNode[] = [];
  const suites = document.testsuites;
  if (typeof suites === 'object' && suites !== null) roots.push(suites as XmlNode);
  else if (suites === '') return [];
  else if (Array.isArray(document.testsuite)) roots.push(document);
  else return null;
  const testcases: XmlNode[] = [];
  for (const root of roots) {
    const found = collectCases(root);
    if (found === null || testcases.length + found.length > MAX_TESTCASES) return null;
    testcases.push(...found);
  }
  const cases: JunitCase[] = [];
  for (const testcase of testcases) {
    const name = text(testcase, 'name');
    if (name === null) continue;
    const classname = text(testcase, 'classname');
    const id =
      ids.style === 'pytest'
        ? classname === null ? name : nodeId(classname, name, text(testcase, 'file'), ids.modules)
        : classname === null || classname === '' ? name : `${classname}::${name}`;
    const seconds = Number(text(testcase, 'time') ?? 0);
    cases.push({ id, ...outcomeOf(testcase), durationMs: Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : 0 });
  }
  return cases;
}
