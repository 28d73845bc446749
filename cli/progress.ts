/** One status line for long work: done / total, rate, ETA; rewritten in place on a terminal. */
export function progressLine(label: string, done: number, total: number, elapsedMs: number, extra = ''): string {
  const rate = done / Math.max(0.001, elapsedMs / 1000);
  const eta = rate > 0 && total > done ? `${Math.ceil((total - done) / rate)}s` : done >= total ? 'done' : '?';
  const percent = total ? Math.floor((100 * done) / total) : 100;
  return `${label} ${done}/${total} (${percent}%) · ${rate.toFixed(2)}/s · ETA ${eta}${extra ? ` · ${extra}` : ''}`;
}

export function printProgress(line: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${line}`);
  else process.stderr.write(`${line}\n`);
}

export function endProgress(): void {
  if (process.stderr.isTTY) process.stderr.write('\n');
}
