/**
 * A tokenizer for Python source, the one the task job compares code with (exact and near duplicates): the
 * token stream of Python's `tokenize` without the tokens that only carry layout (NL, ENCODING, ENDMARKER),
 * so two sources with the same tokens differ only in whitespace the interpreter does not care about:
 * trailing spaces, CRLF, blank lines, the trailing newline, spacing inside a line, line continuations,
 * the width of an indentation step. Indentation itself is kept as INDENT and DEDENT.
 *
 * It never throws and never recurses: text Python would refuse (an unterminated string, a stray `$`, a
 * dedent to no enclosing level) still gives a deterministic stream, and its cost is linear in the text.
 */

export const TokenKind = {
  Name: 0,
  Number: 1,
  String: 2,
  Op: 3,
  Comment: 4,
  Newline: 5,
  Indent: 6,
  Dedent: 7,
} as const;
export type TokenKind = (typeof TokenKind)[keyof typeof TokenKind];

const SPACE = 32;
const TAB = 9;
const FORM_FEED = 12;
const NEWLINE = 10;
const HASH = 35;
const BACKSLASH = 92;
const SINGLE_QUOTE = 39;
const DOUBLE_QUOTE = 34;
const DOT = 46;

const isDigit = (code: number): boolean => code >= 48 && code <= 57;
/** Letters, `_` and any non-ASCII character (Python allows most of them in names; the rest are errors anyway). */
const isNameStart = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code > 127;
const isNameChar = (code: number): boolean => isNameStart(code) || isDigit(code);
const STRING_PREFIX = /^(?:[rRuUbBfF]|[bB][rR]|[rR][bB]|[fF][rR]|[rR][fF])$/;

/** Operators of two and three characters, keyed by their character codes (no substring is made to look one up). */
const opKey = (op: string): number => [...op].reduce((key, char) => key * 256 + char.charCodeAt(0), 0);
const OPERATORS_3 = new Map(['**=', '//=', '>>=', '<<=', '...'].map((op) => [opKey(op), op]));
const OPERATORS_2 = new Map(['**', '//', '<<', '>>', '<=', '>=', '==', '!=', '->', '+=', '-=', '*=', '/=', '%=', '&=', '|=', '^=', '@=', ':=', '<>'].map((op) => [opKey(op), op]));
/** Every single character as a string, for the ASCII ones made once. */
const CHARS = Array.from({ length: 128 }, (_, code) => String.fromCharCode(code));
const OPEN_PAREN = 40;
const CLOSE_PAREN = 41;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

/** Calls `onToken` with each token of `source`, in order. CR and CRLF are read as LF, as Python does. */
export function scanPython(source: string, onToken: (kind: TokenKind, text: string) => void): void {
  const text = source.includes('\r') ? source.replace(/\r\n?/g, '\n') : source;
  const length = text.length;
  const indents = [0];
  let depth = 0; // open brackets: newlines inside them are layout
  let lineHasTokens = false;
  let atLineStart = true;
  let i = 0;
  const emit = (kind: TokenKind, value: string): void => {
    lineHasTokens = true;
    onToken(kind, value);
  };

  while (i < length) {
    if (atLineStart) {
      atLineStart = false;
      if (depth === 0) {
        let column = 0;
        let j = i;
        for (; j < length; j++) {
          const code = text.charCodeAt(j);
          if (code === SPACE) column++;
          else if (code === TAB) column = (Math.floor(column / 8) + 1) * 8;
          else if (code === FORM_FEED) column = 0;
          else break;
        }
        i = j;
        const next = i < length ? text.charCodeAt(i) : NEWLINE;
        // Blank and comment-only lines do not change the indentation.
        const blank = next === NEWLINE || next === HASH || (next === BACKSLASH && text.charCodeAt(i + 1) === NEWLINE);
        if (!blank) {
          if (column > indents[indents.length - 1]!) {
            indents.push(column);
            onToken(TokenKind.Indent, '');
          } else {
            while (indents.length > 1 && column < indents[indents.length - 1]!) {
              indents.pop();
              onToken(TokenKind.Dedent, '');
            }
          }
        }
        continue;
      }
    }
    const code = text.charCodeAt(i);
    if (code === SPACE || code === TAB || code === FORM_FEED) {
      i++;
      continue;
    }
    if (code === NEWLINE) {
      i++;
      if (depth > 0) continue;
      if (lineHasTokens) onToken(TokenKind.Newline, '');
      lineHasTokens = false;
      atLineStart = true;
      continue;
    }
    if (code === BACKSLASH && text.charCodeAt(i + 1) === NEWLINE) {
      i += 2; // a line continuation: the logical line goes on
      continue;
    }
    if (code === HASH) {
      let end = text.indexOf('\n', i);
      if (end < 0) end = length;
      let trimmed = end;
      while (trimmed > i && (text.charCodeAt(trimmed - 1) === SPACE || text.charCodeAt(trimmed - 1) === TAB)) trimmed--;
      // A comment does not make a line a logical line of its own.
      onToken(TokenKind.Comment, text.slice(i, trimmed));
      i = end;
      continue;
    }
    if (code === SINGLE_QUOTE || code === DOUBLE_QUOTE) {
      const end = stringEnd(text, i);
      emit(TokenKind.String, text.slice(i, end));
      i = end;
      continue;
    }
    if (isNameStart(code)) {
      let end = i + 1;
      while (end < length && isNameChar(text.charCodeAt(end))) end++;
      const quote = text.charCodeAt(end);
      if ((quote === SINGLE_QUOTE || quote === DOUBLE_QUOTE) && end - i <= 2 && STRING_PREFIX.test(text.slice(i, end))) {
        const stringEnds = stringEnd(text, end);
        emit(TokenKind.String, text.slice(i, stringEnds));
        i = stringEnds;
        continue;
      }
      emit(TokenKind.Name, text.slice(i, end));
      i = end;
      continue;
    }
    if (isDigit(code) || (code === DOT && isDigit(text.charCodeAt(i + 1)))) {
      const end = numberEnd(text, i);
      emit(TokenKind.Number, text.slice(i, end));
      i = end;
      continue;
    }
    // Character codes past the end are NaN, so no operator key matches there.
    const second = text.charCodeAt(i + 1);
    const twoKey = code * 256 + second;
    const op = OPERATORS_3.get(twoKey * 256 + text.charCodeAt(i + 2)) ?? OPERATORS_2.get(twoKey) ?? (code < 128 ? CHARS[code]! : text[i]!);
    if (code === OPEN_PAREN || code === OPEN_BRACKET || code === OPEN_BRACE) depth++;
    else if ((code === CLOSE_PAREN || code === CLOSE_BRACKET || code === CLOSE_BRACE) && depth > 0) depth--;
    emit(TokenKind.Op, op);
    i += op.length;
  }
  if (lineHasTokens) onToken(TokenKind.Newline, '');
  for (let level = 1; level < indents.length; level++) onToken(TokenKind.Dedent, '');
}

/** End of the string literal whose opening quote is at `start`. An unterminated one ends at its line's end (one quote) or the text's end (three). */
function stringEnd(text: string, start: number): number {
  const quote = text[start]!;
  const triple = text.startsWith(quote.repeat(3), start);
  const closing = triple ? quote.repeat(3) : quote;
  let i = start + closing.length;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === BACKSLASH) {
      i += 2; // escapes the next character, in raw strings too (as far as where the string ends)
      continue;
    }
    if (!triple && code === NEWLINE) return i;
    if (text.startsWith(closing, i)) return i + closing.length;
    i++;
  }
  return text.length;
}

/** End of the number at `start`: digits, `_`, `.`, hex/octal/binary letters, an exponent with its sign, a `j` suffix. */
function numberEnd(text: string, start: number): number {
  let i = start;
  const radix = text.charCodeAt(start) === 48 && /[xXoObB]/.test(text[start + 1] ?? '');
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (isNameChar(code) && code <= 127) {
      i++;
      const sign = text.charCodeAt(i);
      if (!radix && (code === 101 || code === 69) && (sign === 43 || sign === 45) && isDigit(text.charCodeAt(i + 1))) i++;
      continue;
    }
    if (code === DOT && !radix && text.charCodeAt(i + 1) !== DOT) {
      i++;
      continue;
    }
    break;
  }
  return i;
}
