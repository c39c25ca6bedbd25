// The runner's protocol for a consumer child (a task worker or an outbox dispatcher): say
// 'ready', start on 'go', report the handled count, answer 'cpu' and 'stats', and
// stop cleanly on 'stop'.
type Send = (message: Record<string, unknown>) => Promise<void>;

/** What a consumer child runs. */
export interface Consumer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Handler calls so far. */
  handled(): number;
  /** Anything else the runner may ask for with 'stats'. */
  stats(): Record<string, unknown>;
  /** Optional: reset what `stats` reports (on 'reset-stats'). */
  resetStats?(): void;
}

export async function serveConsumer(consumer: Consumer, send: Send): Promise<void> {
  let cpuAtGo = process.cpuUsage();
  // The count goes out every `step` items, and whenever it stopped moving for a tick (so the
  // final count arrives within ~10 ms): few IPC messages while busy, which would otherwise cost
  // the measured process CPU.
  const step = 500;
  let reported = -1;
  let last = -1;
  const timer = setInterval(() => {
    const n = consumer.handled();
    const still = n === last;
    last = n;
    if (n === reported || (!still && n - reported < step)) return;
    reported = n;
    process.send!({ type: 'count', n });
  }, 5);
  const on = async (m: { type: string }) => {
    switch (m.type) {
      case 'go':
        cpuAtGo = process.cpuUsage();
        await consumer.start();
        return send({ type: 'started' });
      case 'cpu': {
        const used = process.cpuUsage(cpuAtGo);
        return send({ type: 'cpu', ms: (used.user + used.system) / 1000 });
      }
      case 'stats':
        return send({ type: 'stats', ...consumer.stats() });
      case 'reset-stats':
        consumer.resetStats?.();
        return send({ type: 'stats-reset' });
      case 'stop':
        clearInterval(timer);
        await consumer.stop();
        await send({ type: 'stopped', handled: consumer.handled(), ...consumer.stats() });
        process.exit(0);
    }
  };
  process.on('message', (m: { type: string }) => {
    on(m).catch(async (error: unknown) => {
      await send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
      process.exit(1);
    });
  });
  await send({ type: 'ready' });
}
