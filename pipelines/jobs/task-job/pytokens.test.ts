import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkoutFile } from '../../../schemas/index.js';
import { runHelperLines } from './python.js';
import { scanPython, TokenKind } from './pytokens.js';

const tokensOf = (source: string): Array<[number, string]> => {
  const out: Array<[number, string]> = [];
  scanPython(source, (kind, text) => out.push([kind, text]));
  return out;
};

const TRICKY = [
  'def f(a, *, b=1, **kw) -> int:\n    """Doc\n    string"""\n    return a ** -b // 2 if a >= b else a\n',
  'x = (1 +\n     2)  # spread over lines\ny = [\n    1,\n\n    2,\n]\n',
  "s = r'\\d+' + b\"x\\\"y\" + f'{a!r:>{w}}' + rb'\\\\' + u'é'\n",
  'if x:\n\tif y:\n\t\tpass\n  # a comment at another level\n\telse:\n\t\tz = 1e-3 + 0x_ff + 1_000j + .5 + 5.\n',
  'class C:\n    def m(self):\n        return self.value @ other\n\n\n# end\n',
  'total = a + \\\n    b\nwhile (n := n - 1) > 0: ...\n',
  'a = 1\nb = 2',
  'lambda: (yield)\nx = [i for i in range(3) if i != 2]\nprint(x[1:-1], {**d}, {1, 2})\n',
  'for é in "ünïcode":\n    print(é)\n',
];

describe('scanPython', () => {
  it("gives Python's own tokens, less the layout, over the bundled tasks and tricky sources", async () => {
    const sources = [...TRICKY];
    for (const line of readFileSync(checkoutFile(join('tasks', 'repair-bundle.jsonl')), 'utf8').split('\n').filter(Boolean)) {
      const row = JSON.parse(line) as Record<string, string>;
      sources.push(row.buggy_source!, row.fixed_source!, row.visible_tests!, row.hidden_tests!);
    }
    const answers = await runHelperLines<{ key: number; source: string }, { key: number; tokens?: Array<[number, string]>; error?: string }>(
      'python_tokens.py',
      sources.map((source, key) => ({ key, source })),
    );
    for (const answer of answers) {
      assert.equal(answer.error, undefined, `Python refuses source ${answer.key}`);
      assert.deepEqual(tokensOf(sources[answer.key]!), answer.tokens, `source ${answer.key}:\n${sources[answer.key]}`);
    }
  });

  it('gives the same tokens whatever the layout the interpreter ignores', () => {
    const base = 'def f(x):\n    if x:\n        return [x,\n                x]\n    return None\n';
    const variants = [
      base.replaceAll('\n', '\r\n'),
      base.replaceAll('\n', '   \n'),
      base.replace('\n    return None', '\n\n\n    return None') + '\n\n',
      base.trimEnd(),
      base.replaceAll('    ', '\t').replace('\t\t', '\t  '),
      base.replace('[x,\n                x]', '[x, x]'),
      base.replace('return [x,', 'return \\\n [x,'),
    ];
    for (const variant of variants) assert.deepEqual(tokensOf(variant), tokensOf(base), JSON.stringify(variant));
    assert.notDeepEqual(tokensOf(base.replace('    return None', 'return None')), tokensOf(base), 'indentation is kept');
    assert.notDeepEqual(tokensOf(base.replace('None', '"a  b"')), tokensOf(base.replace('None', '"a b"')), 'string contents are kept');
  });

  it('never throws, and is linear on pathological text', () => {
    for (const text of ['"unterminated', "'''never closed", 'x = $ ? `', '  x\n y\n', '\\', '(((((', ')))', '\u0000\ud800']) assert.ok(Array.isArray(tokensOf(text)));
    const deep = `x = ${'('.repeat(500_000)}1${')'.repeat(500_000)}\n`;
    const tokens = tokensOf(deep);
    assert.equal(tokens.length, 1_000_000 + 4);
    assert.deepEqual(tokens.at(-1), [TokenKind.Newline, '']);
    assert.equal(tokensOf(`${' '.repeat(1_000_000)}x`).length, 4);
  });
});
