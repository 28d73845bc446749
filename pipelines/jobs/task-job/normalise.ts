const NON_ASCII = /[^\x00-\x7f]/;

/** Code as published: LF line endings and one final newline; nothing inside a line changes, since a string literal may depend on it. */
export function normaliseCode(text: string): string {
  const unified = text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
  if (!unified.endsWith('\n')) return `${unified}\n`;
  let end = unified.length - 1;
  while (end > 0 && unified[end - 1] === '\n') end--;
  return end === unified.length - 1 ? unified : unified.slice(0, end + 1);
}

/** Prose as published: NFC, LF line endings, no trailing spaces on a line, no leading or trailing blank lines. */
export function normaliseProse(text: string): string {
  const composed = NON_ASCII.test(text) ? text.normalize('NFC') : text;
  const unified = composed.includes('\r') ? composed.replace(/\r\n?/g, '\n') : composed;
  return (TRAILING_SPACE.test(unified) ? trimLineEnds(unified) : unified).trim();
}

const TRAILING_SPACE = /[ \t]\n/;

/** Spaces and tabs off the end of every line, in one pass (`/[ \t]+$/gm` backtracks quadratically on a long run of spaces). */
function trimLineEnds(text: string): string {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let end = line.length;
    while (end > 0 && (line.charCodeAt(end - 1) === 32 || line.charCodeAt(end - 1) === 9)) end--;
    if (end < line.length) lines[i] = line.slice(0, end);
  }
  return lines.join('\n');
}
