// Text and JSON that PostgreSQL cannot store, or would store changed, at every entry point that
// writes inside the caller's transaction. Each is refused by the call that received it, with a
// typed error naming the field, before any SQL: the caller's transaction stays usable (another
// statement runs in it and commits), and nothing is written.
import fc from 'fast-check';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineTask, enqueue, enqueueMany, INPUT_LIMITS, type Executor } from '@leasehold/core';
import { textFault, toJsonText } from '@leasehold/core/internal';
import { createDispatcher, createOutbox, type OutboxEvent } from '@leasehold/outbox';
import { createInbox, httpPublisher } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';
import { readMessages, resetOutbox } from '../outbox/helpers.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const loose = defineTask<unknown>('loose', { handler: async () => {} });
const outbox = createOutbox({ orderedEventTypes: ['OrderPaid'] });
const inbox = createInbox();

beforeAll(async () => {
  await sql`CREATE TABLE marker (label text NOT NULL)`.execute(t.db);
});

/** Nests `levels` arrays and objects around a string. */
function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

// bad text, each for a different reason; byte bounds use a 3-byte character, so the character
// count alone would pass
const BAD_TEXT: Record<string, string> = {
  'a NUL': 'a\u0000b',
  'a lone high surrogate': 'a\ud800',
  'a lone low surrogate': '\udc00b',
  'a reversed pair': '\udc00\ud800',
};
const overName = '€'.repeat(Math.floor(INPUT_LIMITS.nameBytes / 3) + 1);
const overKey = '€'.repeat(Math.floor(INPUT_LIMITS.keyBytes / 3) + 1);
const BAD_PAYLOADS: Record<string, unknown> = {
  'a NUL in a string': { s: 'a\u0000b' },
  'a NUL in a key': { ['k\u0000']: 1 },
  'a lone surrogate in a string': { s: ['x\ud800'] },
  'a lone surrogate in a key': { ['\udc00']: 1 },
  [`nesting past ${INPUT_LIMITS.jsonDepth}`]: nested(INPUT_LIMITS.jsonDepth + 1),
};

const base = { aggregateType: 'order', aggregateId: 'o-1', eventType: 'OrderPaid', payload: { ok: true } } satisfies OutboxEvent;

/** One entry point given one bad value: what to call, and the error it must throw. */
interface Case {
  readonly label: string;
  readonly run: (executor: Executor) => Promise<unknown>;
  readonly expected: { code: string; option?: string; message?: RegExp };
}

function cases(): Case[] {
  const list: Case[] = [];
  const config = (option: string) => ({ code: 'CONFIG', option });
  for (const [what, text] of [...Object.entries(BAD_TEXT), ['too many bytes', overKey] as const]) {
    list.push(
      { label: `enqueue groupKey: ${what}`, run: (x) => enqueue(x, loose, {}, { groupKey: text }), expected: config('groupKey') },
      { label: `enqueue dedupKey: ${what}`, run: (x) => enqueue(x, loose, {}, { dedupKey: text }), expected: config('dedupKey') },
      {
        label: `enqueueMany dedupKey: ${what}`,
        run: (x) => enqueueMany(x, loose, [{ payload: {} }, { payload: {}, dedupKey: text }]),
        expected: config('dedupKey'),
      },
      { label: `add aggregateId: ${what}`, run: (x) => outbox.add(x, { ...base, aggregateId: text }), expected: config('event.aggregateId') },
      {
        label: `addMany aggregateId: ${what}`,
        run: (x) => outbox.addMany(x, [base, { ...base, aggregateId: text }]),
        expected: config('events[1].aggregateId'),
      },
      { label: `inbox messageId: ${what}`, run: (x) => inbox.receive(x as never, text, async () => 'applied'), expected: config('messageId') },
    );
  }
  for (const [what, text] of [...Object.entries(BAD_TEXT), ['too many bytes', overName] as const]) {
    list.push(
      { label: `add aggregateType: ${what}`, run: (x) => outbox.add(x, { ...base, aggregateType: text }), expected: config('event.aggregateType') },
      { label: `add eventType: ${what}`, run: (x) => outbox.add(x, { ...base, eventType: text }), expected: config('event.eventType') },
      {
        label: `addMany header name: ${what}`,
        run: (x) => outbox.addMany(x, [base, { ...base, headers: { trace: '1', [text]: 'v' } }]),
        expected: { code: 'CONFIG', option: 'events[1].headers', message: /name of header 2/ },
      },
    );
  }
  const overValue = '€'.repeat(Math.floor(INPUT_LIMITS.headerValueBytes / 3) + 1);
  for (const [what, text] of [...Object.entries(BAD_TEXT), ['too many bytes', overValue] as const]) {
    list.push(
      {
        label: `add header value: ${what}`,
        run: (x) => outbox.add(x, { ...base, headers: { 'x-tenant-token': `tok_${text}` } }),
        expected: config('event.headers.x-tenant-token'),
      },
      {
        label: `addMany header value: ${what}`,
        run: (x) => outbox.addMany(x, [base, base, base, { ...base, headers: { 'x-tenant-token': text } }]),
        expected: config('events[3].headers.x-tenant-token'),
      },
    );
  }
  for (const [what, payload] of Object.entries(BAD_PAYLOADS)) {
    const invalid = { code: 'PAYLOAD_VALIDATION', message: /invalid payload for task "loose": Expected `payload`/ };
    list.push(
      { label: `enqueue payload: ${what}`, run: (x) => enqueue(x, loose, payload), expected: invalid },
      { label: `enqueueMany payload: ${what}`, run: (x) => enqueueMany(x, loose, [{ payload: {} }, { payload }]), expected: invalid },
      { label: `add payload: ${what}`, run: (x) => outbox.add(x, { ...base, payload }), expected: config('event.payload') },
      { label: `addMany payload: ${what}`, run: (x) => outbox.addMany(x, [base, { ...base, payload }]), expected: config('events[1].payload') },
    );
  }
  return list;
}

async function written(): Promise<Record<string, number>> {
  const { rows } = await sql<{ task: number; outbox: number; inbox: number; marker: number }>`
    SELECT (SELECT count(*)::int FROM leasehold.task) AS task, (SELECT count(*)::int FROM leasehold.outbox) AS outbox,
           (SELECT count(*)::int FROM leasehold.inbox) AS inbox, (SELECT count(*)::int FROM marker) AS marker`.execute(t.db);
  return rows[0]!;
}

async function reset(): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.outbox, leasehold.inbox, marker`.execute(t.db);
}

/**
 * Runs `c` inside a transaction of the given kind, then another statement in the same
 * transaction, then COMMIT. If the bad value had reached PostgreSQL, the transaction would be
 * aborted: the marker insert would fail (25P02), or COMMIT would roll back.
 */
async function inTransaction(kind: 'kysely' | 'pg', c: Case): Promise<unknown> {
  if (kind === 'kysely') {
    return t.db.transaction().execute(async (trx) => {
      const error = await c.run(trx).then(() => undefined, (e: unknown) => e);
      await sql`INSERT INTO marker VALUES (${c.label})`.execute(trx);
      return error;
    });
  }
  const client = await t.client();
  await client.query('BEGIN');
  const error = await c.run(client).then(() => undefined, (e: unknown) => e);
  await client.query('INSERT INTO marker VALUES ($1)', [c.label]);
  await client.query('COMMIT');
  return error;
}

describe('bad text and JSON at every entry point, inside the caller\'s transaction', () => {
  for (const kind of ['kysely', 'pg'] as const) {
    it(`each is a typed error naming the field; the ${kind} transaction goes on and commits; nothing is written`, async () => {
      await reset();
      const all = cases();
      for (const c of all) {
        const error = await inTransaction(kind, c);
        expect(error, c.label).toMatchObject({ code: c.expected.code, ...(c.expected.option ? { option: c.expected.option } : {}) });
        if (c.expected.message) expect((error as Error).message, c.label).toMatch(c.expected.message);
        // no part of a refused value is shown: header values and keys may be credentials
        const message = (error as Error).message;
        expect(message.includes('tok_') || message.includes('€€') || message.includes('\u0000') || textFault(message) !== undefined, c.label).toBe(false);
      }
      expect(await written()).toEqual({ task: 0, outbox: 0, inbox: 0, marker: all.length });
    });
  }

  it('defineTask refuses the same names, before any SQL', async () => {
    for (const name of [...Object.values(BAD_TEXT), overName]) {
      expect(() => defineTask(name, { handler: async () => {} }), JSON.stringify(name)).toThrow(expect.objectContaining({ code: 'CONFIG', option: 'name' }));
    }
  });
});

describe('what is accepted is stored exactly', () => {
  it('a payload and headers holding the text \\u0000 (backslash, u, 0000) round-trip exactly, through enqueue and add', async () => {
    await reset();
    const payload = { s: '\\u0000', ['\\u0000']: '\\\\u0000', pair: '😀', surrogateText: '\\ud800', deep: nested(INPUT_LIMITS.jsonDepth - 1) };
    const headers = { 'x-note': '\\u0000', 'x-emoji': '😀' };
    const { id: taskId } = await enqueue(t.pool, loose, payload, { groupKey: '\\u0000 😀', dedupKey: 'k\\ud800' });
    const outboxId = await outbox.add(t.pool, { ...base, aggregateId: '\\u0000', payload, headers });
    const task = await sql<{ payload: unknown; group_key: string; dedup_key: string }>`
      SELECT payload, group_key, dedup_key FROM leasehold.task WHERE id = ${taskId}`.execute(t.db);
    expect(task.rows[0]).toEqual({ payload, group_key: '\\u0000 😀', dedup_key: 'k\\ud800' });
    const message = await sql<{ payload: unknown; headers: unknown; aggregate_id: string }>`
      SELECT payload, headers, aggregate_id FROM leasehold.outbox WHERE id = ${outboxId}`.execute(t.db);
    expect(message.rows[0]).toEqual({ payload, headers, aggregate_id: '\\u0000' });
  });

  it('the text and JSON rules refuse exactly what PostgreSQL would refuse or change', async () => {
    const unit = fc.oneof(
      fc.constantFrom('\\', 'u', '0', 'd800', '\\u0000', '\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '"', '😀', 'é'),
      fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ unit, maxLength: 8 }), async (text) => {
        // text column: PostgreSQL refuses NUL and silently replaces a lone surrogate
        const asText = await sql<{ v: string }>`SELECT ${text}::text AS v`.execute(t.db).then((r) => r.rows[0]!.v, () => undefined);
        expect(asText === text, JSON.stringify(text)).toBe(textFault(text) === undefined);
        // jsonb: toJsonText lets through exactly what PostgreSQL stores and gives back unchanged
        const value = { [text]: [text] };
        const stored = await sql<{ v: unknown }>`SELECT ${JSON.stringify(value)}::jsonb AS v`
          .execute(t.db)
          .then((r) => r.rows[0]!.v, () => undefined);
        const accepted = (() => {
          try {
            toJsonText(value, 'payload');
            return true;
          } catch {
            return false;
          }
        })();
        expect(accepted, JSON.stringify(text)).toBe(JSON.stringify(stored) === JSON.stringify(value));
      }),
      { numRuns: 300 },
    );
  });
});

describe('headers an HTTP publisher cannot send', () => {
  const target = 'http://127.0.0.1:9/hook'; // never reached: every case fails before the request
  const BAD_HTTP: Record<string, string> = { ...BAD_TEXT, 'CR LF': 'a\r\nx-injected: 1', 'a character above U+00FF': 'tok_€' };

  it('fixed headers are a ConfigError at httpPublisher(), naming the header', () => {
    for (const [what, value] of Object.entries(BAD_HTTP)) {
      let thrown: unknown;
      try {
        httpPublisher({ url: target, headers: { 'x-tenant-token': value } });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, what).toMatchObject({ code: 'CONFIG', option: 'headers.x-tenant-token' });
    }
  });

  it('computed headers fail the publish permanently, naming the header and not showing it', async () => {
    const message = { id: '1', key: 'k', aggregateType: 'a', eventType: 'e', payload: {}, headers: {}, attempts: 1, createdAt: new Date() };
    for (const [what, value] of Object.entries(BAD_HTTP)) {
      const p = httpPublisher({ url: target, headers: () => ({ 'x-tenant-token': value }) });
      const error = await p.publish(message, { signal: new AbortController().signal }).catch((e: unknown) => e as Error);
      expect(error, what).toMatchObject({ code: 'PERMANENT' });
      expect((error as Error).message, what).toContain('header `headers(message).x-tenant-token`');
      expect((error as Error).message, what).not.toContain('tok_');
    }
  });

  it('an event header the outbox can store but HTTP cannot send goes dead once, naming the header', async () => {
    await resetOutbox(t.db);
    // CR LF and non-Latin-1 text are storable: the outbox, which serves any publisher, takes them
    const ids = await outbox.addMany(t.pool, [
      { ...base, eventType: 'Noted', headers: { 'x-note': 'a\r\nx-injected: 1' } },
      { ...base, eventType: 'Noted', headers: { 'x-note': 'price in €' } },
    ]);
    const dispatcher = track(createDispatcher({ pool: t.pool, publisher: httpPublisher({ url: target }), pollInterval: '50ms' }));
    const dead = new Set<string>();
    const bothDead = nextEvent(dispatcher, 'task:dead', ({ task }) => dead.add(task.id).size === 2);
    await dispatcher.start();
    try {
      await bothDead;
    } finally {
      await dispatcher.stop();
    }
    for (const row of await readMessages(t.db, ids)) {
      expect(row).toMatchObject({ status: 'dead', attempts: 1 });
      expect(row.lastError).toContain('header `message.headers.x-note`');
    }
  });
});
