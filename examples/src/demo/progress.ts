import type { OutboxStats } from '@leasehold/outbox';
import type { OrderServiceProgress } from './order-service.js';
import type { ReceiverCounters } from './receiver.js';
import type { Kill } from './workers.js';

/** One snapshot of everything the progress line shows. */
export interface Snapshot {
  readonly elapsedMs: number;
  readonly orders: OrderServiceProgress;
  readonly stats: OutboxStats;
  readonly receiver: ReceiverCounters;
  readonly kill: Kill | undefined;
}

/** The live progress line: rewritten in place on a terminal, one line every 2 s otherwise. */
export function createProgressLine(stream: NodeJS.WriteStream = process.stdout): { update(s: Snapshot): void; end(): void } {
  const tty = stream.isTTY === true;
  let lastPrinted = -Infinity;
  let shown = false;
  return {
    update(s) {
      const line = describe(s);
      if (tty) {
        stream.write(`\r\x1b[2K${line.slice(0, (stream.columns ?? 160) - 1)}`);
        shown = true;
      } else if (s.elapsedMs - lastPrinted >= 2_000) {
        stream.write(`${line}\n`);
        lastPrinted = s.elapsedMs;
      }
    },
    end() {
      if (tty && shown) stream.write('\n');
    },
  };
}

function describe({ elapsedMs, orders, stats, receiver, kill }: Snapshot): string {
  const { pending, processing, done, dead } = stats.counts;
  const parts = [
    `orders ${orders.placed} placed ${orders.paid} paid`,
    `events: ${pending} pending, ${processing} in flight, ${done} delivered, ${dead} dead`,
    `receiver: ${receiver.unavailable}×503, ${receiver.applied} applied, ${receiver.duplicates} duplicates absorbed`,
    kill ? `${kill.worker} killed` : '',
  ];
  return `[${(elapsedMs / 1000).toFixed(1).padStart(5)}s] ${parts.filter((p) => p !== '').join(' · ')}`;
}
