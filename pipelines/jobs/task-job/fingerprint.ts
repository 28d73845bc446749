import { createHash } from 'node:crypto';
import { hashText, pushToken, tokenHashes, type TokenBuffer } from './minhash.js';
import { KEPT_ATTRIBUTES, KEPT_NAMES } from './python-names.js';
import { scanPython, TokenKind } from './pytokens.js';

/** What two rows are compared by: their prose (descriptions) and their Python code (module, tests), in a fixed order. */
export interface ComparableRow {
  readonly prose: readonly string[];
  readonly code: readonly string[];
}

export interface RowFingerprint {
  /**
   * sha256 (hex) of the row up to what does not change its meaning: prose in NFC with whitespace runs as one
   * space; code as its Python tokens, so trailing spaces, CRLF, blank lines, the trailing newline, spacing
   * within a line and continuations do not count, while indentation, names, literals and comments do.
   */
  readonly exact: string;
  /** The same sha256, as bytes (what dedup's columns keep 128 bits of). */
  readonly digest: Buffer;
  /** Token hashes for near-duplicate shingles, in `RowFingerprinter.tokens` (valid until the next call). */
  readonly tokenCount: number;
}

const NON_ASCII = /[^\x00-\x7f]/;
const INDENT_HASH = hashText('\u0001indent');
const DEDENT_HASH = hashText('\u0001dedent');
const NEWLINE_HASH = hashText('\u0001newline');
/** The hash of the n-th distinct renamed identifier of a row: its own domain, no token text hashes like it. */
const placeholderHashes: number[] = [];
const placeholderHash = (n: number): number => {
  while (placeholderHashes.length <= n) placeholderHashes.push(hashText(`\u0002${placeholderHashes.length}`));
  return placeholderHashes[n]!;
};
/** Hashes of kept names and of operators, computed once per distinct text (a small vocabulary; the cache is capped all the same). */
const tokenHashCache = new Map<string, number>();
const TOKEN_CACHE_LIMIT = 1 << 16;
function cachedHash(text: string): number {
  let hash = tokenHashCache.get(text);
  if (hash === undefined) {
    hash = hashText(text);
    if (tokenHashCache.size < TOKEN_CACHE_LIMIT) tokenHashCache.set(text, hash);
  }
  return hash;
}

/** Python reads identifiers in NFKC; names that differ only in compatibility forms are one name. */
const canonicalName = (name: string): string => (NON_ASCII.test(name) ? name.normalize('NFKC') : name);

/**
 * Fingerprints rows for deduplication in one pass over their text: the exact key, and the tokens near
 * duplicates are shingled from. In the near-duplicate tokens, code is normalised as code-clone detectors do
 * (type-2 clones): every identifier that is not a keyword, a builtin or a built-in type's method (`xs.append`) becomes a
 * placeholder numbered by first appearance in the row (module and tests share the numbering, so a function
 * renamed in both stays one name), and comments are left out; literals are kept. A copy whose variables and
 * functions were renamed therefore has the same tokens. Nothing here changes the stored task.
 */
export class RowFingerprinter {
  /** Token hashes of the last row fingerprinted (grown as needed). */
  readonly tokens: TokenBuffer = { buffer: new Int32Array(1024) };

  fingerprint(row: ComparableRow): RowFingerprint {
    const pieces: string[] = [];
    let count = 0;
    for (const prose of row.prose) {
      const composed = NON_ASCII.test(prose) ? prose.normalize('NFC') : prose;
      const collapsed = composed.replace(/\s+/g, ' ').trim();
      pieces.push(`p${collapsed.length}:${collapsed}`);
      count = tokenHashes(collapsed, this.tokens, count);
    }
    const placeholders = new Map<string, number>();
    for (const code of row.code) {
      const tokens: string[] = [];
      const ascii = !NON_ASCII.test(code);
      let attribute = false; // the previous token was a "."
      scanPython(code, (kind, text) => {
        const afterDot = attribute;
        attribute = kind === TokenKind.Op && text === '.';
        switch (kind) {
          case TokenKind.Name: {
            const name = ascii ? text : canonicalName(text);
            tokens.push(name);
            let hash: number;
            if (KEPT_NAMES.has(name) || (afterDot && KEPT_ATTRIBUTES.has(name)) || (name.startsWith('__') && name.endsWith('__'))) hash = cachedHash(name);
            else {
              let n = placeholders.get(name);
              if (n === undefined) placeholders.set(name, (n = placeholders.size));
              hash = placeholderHash(n);
            }
            count = pushToken(this.tokens, count, hash);
            return;
          }
          case TokenKind.String:
            tokens.push(`${text.length}:${text}`);
            count = pushToken(this.tokens, count, hashText(text));
            return;
          case TokenKind.Comment:
            tokens.push(`${text.length}:${text}`);
            return;
          case TokenKind.Newline:
            tokens.push('\n');
            count = pushToken(this.tokens, count, NEWLINE_HASH);
            return;
          case TokenKind.Indent:
            tokens.push('\t>');
            count = pushToken(this.tokens, count, INDENT_HASH);
            return;
          case TokenKind.Dedent:
            tokens.push('\t<');
            count = pushToken(this.tokens, count, DEDENT_HASH);
            return;
          default:
            tokens.push(text);
            count = pushToken(this.tokens, count, kind === TokenKind.Op ? cachedHash(text) : hashText(text));
        }
      });
      const joined = tokens.join(' ');
      pieces.push(`c${joined.length}:${joined}`);
    }
    const digest = createHash('sha256').update(pieces.join('\u0000')).digest();
    return { exact: digest.toString('hex'), digest, tokenCount: count };
  }
}
