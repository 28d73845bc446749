/** A worker thread of RowCheckPool: checks the batches it is sent, in the order sent. */
import { parentPort, workerData } from 'node:worker_threads';
import { RowChecker, type MappedItem, type RowCheckSettings } from './row-check.js';
import type { CheckReply, CheckRequest } from './check-pool.js';

const checker = new RowChecker(workerData as RowCheckSettings);
parentPort!.on('message', ({ batch, items }: CheckRequest) => {
  const reply: CheckReply = { batch, rows: items.map((item: MappedItem) => checker.check(item)) };
  parentPort!.postMessage(reply);
});
