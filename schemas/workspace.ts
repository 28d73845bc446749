import { z } from 'zod';

/**
 * What of an agent's final workspace a FileTree (UTF-8 name -> UTF-8 text) cannot carry as it is, so that
 * nothing the agent left is silently dropped and the verifier can judge all of it:
 * - a name whose bytes are not valid UTF-8 is carried in escaped form (`escapePathBytes`) as its FileTree
 *   key, and that key is listed in `escapedPaths`;
 * - a symlink is recorded with its target (never followed, never dropped); a path or target that is not
 *   valid UTF-8 is escaped the same way and flagged.
 */
export const WorkspaceSymlink = z.object({
  path: z.string().min(1),
  target: z.string(),
  pathEscaped: z.boolean().default(false),
  targetEscaped: z.boolean().default(false),
});
export type WorkspaceSymlink = z.infer<typeof WorkspaceSymlink>;

export const WorkspaceExtras = z.object({
  escapedPaths: z.array(z.string().min(1)).default([]),
  symlinks: z.array(WorkspaceSymlink).default([]),
});
export type WorkspaceExtras = z.infer<typeof WorkspaceExtras>;

export const NO_WORKSPACE_EXTRAS: WorkspaceExtras = Object.freeze({ escapedPaths: [], symlinks: [] }) as WorkspaceExtras;

// Printable ASCII other than '%' stands for itself; every other byte is %XX. Reversible for any bytes.
const isPlain = (byte: number): boolean => byte > 0x20 && byte < 0x7f && byte !== 0x25;

/** The escaped form of a name's raw bytes: printable ASCII (but '%') as is, every other byte as %XX. */
export function escapePathBytes(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += isPlain(byte) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** The raw bytes an escaped name stands for; throws on text that `escapePathBytes` cannot have written. */
export function unescapePath(escaped: string): Uint8Array {
  const bytes: number[] = [];
  for (let i = 0; i < escaped.length; i++) {
    const code = escaped.charCodeAt(i);
    if (code === 0x25) {
      const hex = escaped.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) throw new Error(`escaped path "${escaped}": "%" at ${i} is not followed by two upper-case hex digits`);
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (isPlain(code)) {
      bytes.push(code);
    } else {
      throw new Error(`escaped path "${escaped}": character ${JSON.stringify(escaped[i])} at ${i} must be escaped`);
    }
  }
  return Uint8Array.from(bytes);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A name as FileTree text: the decoded name when its bytes are valid UTF-8 (and hold no NUL), else its escaped form. */
export function pathFromBytes(bytes: Uint8Array): { readonly path: string; readonly escaped: boolean } {
  if (!bytes.includes(0)) {
    try {
      return { path: strictUtf8.decode(bytes), escaped: false };
    } catch {
      // not UTF-8: fall through to the escaped form
    }
  }
  return { path: escapePathBytes(bytes), escaped: true };
}
