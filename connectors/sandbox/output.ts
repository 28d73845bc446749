/** Keeps the head and tail of a stream within a byte budget, so a flood of output uses bounded memory. */
export class CappedBuffer {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private dropped = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    const headRoom = Math.floor(this.maxBytes / 2) - this.headBytes;
    if (headRoom > 0) {
      const part = chunk.subarray(0, headRoom);
      this.head.push(part);
      this.headBytes += part.length;
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    const tailBudget = this.maxBytes - Math.floor(this.maxBytes / 2);
    while (this.tailBytes > tailBudget && this.tail.length > 0) {
      const excess = this.tailBytes - tailBudget;
      const first = this.tail[0]!;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.dropped += excess;
      }
    }
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  toString(): string {
    const marker = this.truncated ? `\n[... ${this.dropped} bytes truncated ...]\n` : '';
    return Buffer.concat(this.head).toString('utf8') + marker + Buffer.concat(this.tail).toString('utf8');
  }
}
