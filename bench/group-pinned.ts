// What a long transaction elsewhere (the MVCC horizon held) does to the drain of one long ordering
// group: GROUP_PINNED_MESSAGES ordered outbox messages of GROUP_PINNED_GROUPS aggregates (default
// 20,000 of one), preloaded, then one dispatcher at the library defaults, without and then with a
// REPEATABLE READ snapshot held beside it. Every message of a group goes in blocked and leaves
// that state once, so its group's index of blocked rows keeps an entry per message dispatched while
// the snapshot is held. Prints each drain's rate per tenth of its messages, and the index entries
// its scans read per scan, as the server counts them (pg_stat_user_indexes). A measurement, not a
// test: it asserts nothing but the order.
// GROUP_PINNED_SHAPE=trickle adds the messages one at a time instead, each once the one before was
// published, so the aggregate empties after each and is made anew for the next (a busy aggregate
// whose messages leave as they come): its rows' entries stay in the index all the same.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/group-pinned.ts
//   (GROUP_PINNED_HELD: both (default), no or yes; GROUP_PINNED_SHAPE: backlog (default) or trickle)
// Works in a schema of its own (group_pinned_<pid>) in that database, dropped at the end.
import pg from 'pg';
import { holdSnapshot, releaseSnapshot } from '../test/hold-snapshot.js';
import { entriesPerScan, indexReads, settledIndexReads } from './lib/index-reads.js';
import { rateByTenths } from './lib/rate-by-tenths.js';
import { createDispatcher, createOutbox, migrate } from '@leasehold/outbox';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MESSAGES = Number(process.env.GROUP_PINNED_MESSAGES ?? 20_000);
const GROUPS = Number(process.env.GROUP_PINNED_GROUPS ?? 1);
const HELD = { both: [false, true], no: [false], yes: [true] }[process.env.GROUP_PINNED_HELD ?? 'both'];
if (HELD === undefined) throw new Error('GROUP_PINNED_HELD must be both, no or yes');
const SHAPE = process.env.GROUP_PINNED_SHAPE ?? 'backlog';
if (SHAPE !== 'backlog' && SHAPE !== 'trickle') throw new Error('GROUP_PINNED_SHAPE must be backlog or trickle');
const SCHEMA = `group_pinned_${process.pid}`;
const INDEXES = ['outbox_blocked', 'outbox_group_pkey', 'outbox_pkey', 'outbox_claim'];

async function drain(pinned: boolean): Promise<string> {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(admin, { schema: SCHEMA });
  const outbox = createOutbox({ schema: SCHEMA, orderedEventTypes: ['bench.ordered'] });
  const event = (i: number) => ({ aggregateType: 'bench', aggregateId: i % GROUPS, eventType: 'bench.ordered', payload: { i } });
  for (let start = 0; SHAPE === 'backlog' && start < MESSAGES; start += 1000) {
    await outbox.addMany(admin, Array.from({ length: Math.min(1000, MESSAGES - start) }, (_, k) => event(start + k)));
  }
  await admin.query(`ANALYZE ${SCHEMA}.outbox`);
  const holder = pinned ? await holdSnapshot(url, 'group-pinned-horizon') : undefined;
  const before = await indexReads(admin, SCHEMA);
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  let handled = 0;
  let outOfOrder = 0;
  let published: (() => void) | undefined;
  const last = new Map<string, number>();
  const dispatcher = createDispatcher({
    pool,
    schema: SCHEMA,
    publisher: {
      publish: async (message) => {
        const i = (message.payload as { i: number }).i;
        if ((last.get(message.key) ?? -1) > i) outOfOrder++;
        last.set(message.key, i);
        handled++;
        published?.();
      },
    },
  });
  const t0 = performance.now();
  await dispatcher.start();
  const trickle = SHAPE === 'trickle' ? addOneAtATime(outbox, admin, event, (wait) => (published = wait)) : undefined;
  const tenths = await rateByTenths(() => handled, MESSAGES, t0, 900_000);
  await trickle;
  const seconds = (performance.now() - t0) / 1000;
  await dispatcher.stop();
  await pool.end(); // the sessions' counts reach the statistics as they end
  if (holder) await releaseSnapshot(holder);
  const after = await settledIndexReads(admin, SCHEMA);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.end();
  if (outOfOrder > 0) throw new Error(`${outOfOrder} messages published before an earlier one of their aggregate`);
  const reads = entriesPerScan(before, after, INDEXES);
  const rate = Math.round(handled / seconds).toLocaleString('en-US');
  return `| ${pinned ? 'held' : '—'} | ${rate} | ${tenths.map((x) => x.toLocaleString('en-US')).join(' ')} | ${reads.join(' | ')} |`;
}

/** Adds the messages one at a time, each once the one before was published. */
async function addOneAtATime(
  outbox: ReturnType<typeof createOutbox>,
  pool: pg.Pool,
  event: (i: number) => Parameters<ReturnType<typeof createOutbox>['add']>[1],
  onPublished: (resolve: () => void) => void,
): Promise<void> {
  for (let i = 0; i < MESSAGES; i++) {
    const out = new Promise<void>((resolve) => onPublished(resolve));
    await outbox.add(pool, event(i));
    await out;
  }
}

const how = SHAPE === 'trickle' ? 'added one at a time, each once the one before was published' : 'preloaded';
console.log(`${MESSAGES.toLocaleString('en-US')} ordered outbox messages of ${GROUPS.toLocaleString('en-US')} aggregate(s), ${how}, one dispatcher at the library defaults; index entries read per scan`);
console.log(`| snapshot | msg/s | msg/s per tenth | ${INDEXES.join(' | ')} |`);
console.log(`|---|---:|---|${INDEXES.map(() => '---:').join('|')}|`);
for (const pinned of HELD) console.log(await drain(pinned));
