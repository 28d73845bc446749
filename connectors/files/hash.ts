import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/** sha256 over the bytes of each file in the given order, each prefixed by its size, so two file lists that differ anywhere differ in hash. */
export async function hashFiles(files: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const file of files) {
    let size = 0;
    const content = createHash('sha256');
    for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
      content.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    hash.update(`${size}:${content.digest('hex')}\n`);
  }
  return hash.digest('hex');
}
