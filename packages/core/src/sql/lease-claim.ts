import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';
import { limitClaimCtes, limitWriteCtes, stripedOnlyClaimCtes, stripedOnlyWriteCtes } from './lease-claim-limits.js';
import { STRIPE_SET } from './lease-claim-stripes.js';
import { toClaimed, type Claimed } from './lease-row.js';
import { claimedFromChunk, jsonChunks, jsonRowText, type ResumedParts } from './claim-json.js';
import type { ClaimVersions } from './claim-versions.js';
import { servedFilter, servedFilterValues, servedKey, servedShape, type ServedShape } from './served-rows.js';
import { LEASE_COLUMNS, tableRef } from './table-ref.js';

/** Checked inputs of {@link leaseClaim}. */
export interface LeaseClaimInput {
  /** Written to `lease_owner`, for people; correctness rests on `lease_version`. */
  readonly owner: string;
  /** Most rows to take. */
  readonly batch: number;
  /** Lease length in ms, counted from the database's `now()`. */
  readonly leaseMs: number;
  /** Only rows whose name column is one of these; all rows when omitted. */
  readonly names?: readonly string[] | undefined;
  /** Lease per name, where it differs from `leaseMs`. */
  readonly leaseMsByName?: ReadonlyMap<string, number> | undefined;
  /** Only rows of these versions (core's task table): see {@link ClaimVersions}. @defaultValue every version */
  readonly versions?: ClaimVersions | undefined;
  /**
   * Limits (`defineLimit` names) whose rows this claim may take, within their bounds; rows under
   * any other limit are left alone. Only for a table with limits (`LeasedTable.limitTable`).
   * @defaultValue none: only rows under no limit
   */
  readonly flows?: readonly string[] | undefined;
  /**
   * Most rows under limits to take, at most `batch`: a row claimed into a buffer would hold a
   * slot, or have spent a start, while it waits. The worker passes its free handler slots.
   * @defaultValue `batch`
   */
  readonly flowBatch?: number | undefined;
  /**
   * With `flows`: every served limit is expected to be kept in stripes (docs/flow-control.md, "How
   * a large concurrency limit is kept"). A shorter statement, without the part that keeps limits'
   * lists, which is most of the time PostgreSQL spends parsing and planning a claim under limits.
   * It takes no row under a limit kept in its list, and says so in `LeaseClaimResult.listed`:
   * claim again without it then.
   * @defaultValue false
   */
  readonly stripedOnly?: boolean | undefined;
  /**
   * Take only `pending` rows due now (index `<table>_claim`): no reap, no scheduled rows that came
   * due, no expired leases, no parked rows to wake, and no rows under limits. A shorter statement,
   * for the claim that follows a notification (see the worker's claim loop, which still sends the
   * whole claim often enough for the other sources). Ignored with `flows`.
   * @defaultValue false
   */
  readonly readyOnly?: boolean | undefined;
  /**
   * Per priority, the lowest id of that priority the `ready` source may take (see `ReadyFloor`,
   * and the worker's `KeyedFloors` of priorities): rows of that priority below it are left out,
   * so the claim starts past the index entries of rows claimed before, which a long transaction
   * elsewhere keeps from being cleaned up. Rows of the other priorities are all looked at. Only
   * rows that are not there can be left out safely; the worker's floors say which.
   * @defaultValue none left out
   */
  readonly readyFloors?: ReadonlyMap<number, string> | undefined;
  /**
   * With `flows`, per served limit in the same order: the lowest id of key '' and priority 0 the
   * limit's ready rows are read from (see `ReadyFloor`, and the worker's `LimitFloors`); `'0'`
   * (or a missing entry) for every one.
   * @defaultValue none left out
   */
  readonly flowFloors?: readonly string[] | undefined;
  /**
   * Whether the whole claim also takes expired leases and reaps (`processing` rows whose lease
   * ran out). The worker asks for them on a cadence of their own: their index keeps an entry per
   * lease for as long as a long transaction elsewhere holds back vacuum, and every claim would
   * walk all of them. Ignored with `readyOnly`.
   * @defaultValue true
   */
  readonly expired?: boolean | undefined;
  /**
   * With `expired`: only leases that ran out within this many ms before the database's `now()`.
   * The worker's look since its previous one (and a margin) reads only the index entries of
   * leases that ran out since, where the look from the index's start reads an entry per lease
   * that ended since a long transaction elsewhere began; it looks from the start now and then.
   * @defaultValue every lease that ran out
   */
  readonly expiredWithinMs?: number | undefined;
  /**
   * How far ahead the whole claim looks for the next row it could take once due (see
   * `LeaseClaimResult.nextDueMs`), in ms. The worker passes its poll interval: what comes due
   * later, its next poll finds anyway. Ignored with `readyOnly`.
   * @defaultValue 0: no look ahead
   */
  readonly dueWithinMs?: number | undefined;
  /**
   * The whole claim also takes rows that come due within this many ms: scheduled rows and
   * sleeping runs (not a wait that a signal or a child may end sooner, nor rows under limits).
   * `LeaseClaimResult.ahead` tells when each comes due; the caller must not start one before.
   * Ignored with `readyOnly`.
   * @defaultValue 0: only rows due now
   */
  readonly aheadMs?: number | undefined;
  /**
   * Where the whole claim starts reading the scheduled rows that came due (`'due'`, index
   * `<table>_due`) and the parked runs due to wake (`'parked'`, `<table>_waiting`), as those
   * indexes order them: `'<due time in µs since the epoch>:<id>'` (see `LeaseClaimResult.dueFirst`,
   * and the worker's `DueFloors`). Rows before it are left out, so the claim starts past the index
   * entries of rows taken before, which a long transaction elsewhere keeps from being cleaned up.
   * Only rows that are not there can be left out safely; the worker's floors say which.
   * @defaultValue each read from its start
   */
  readonly dueFloors?: ReadonlyMap<DueSource, string> | undefined;
}

/** The whole claim's sources read by due time (see `LeaseClaimInput.dueFloors`). */
export type DueSource = 'due' | 'parked';

/**
 * A `dueFloors` position whose due time is at or below this one's (some 3,000 years before the
 * epoch) reads its source from the start: from `'-infinity'`, below every due time.
 * @internal
 */
export const DUE_BEGINNING = '-100000000000000000:0';
const DUE_BEGINNING_MICROS = Number(DUE_BEGINNING.split(':')[0]);

/** A row that reap moved to `dead` because its lease ran out on its last attempt. */
export interface ReapedRow {
  readonly id: string;
  readonly leaseVersion: number;
}

/** What one claim statement did. */
export interface LeaseClaimResult<Row> {
  /** Rows now owned by this claim, sorted by id. */
  readonly claimed: Claimed<Row>[];
  /** Rows the reap step sent to `dead`. */
  readonly reaped: ReapedRow[];
  /**
   * With `flows`: in how many ms a start of a rate that held rows back leaves its window (claim
   * again then); null when no rate held anything back.
   */
  readonly waitMs: number | null;
  /**
   * With `flows`: rows under limits that were scheduled and became due, moved where the next
   * claim can take them (claim again at once).
   */
  readonly promoted: number;
  /**
   * Per priority the `ready` source read, the lowest id among its candidates of that priority
   * (taken or not): no visible, unlocked row of that priority between its floor in
   * `readyFloors` (or the index's start) and this id was pending when the claim ran. Null when
   * it read none.
   */
  readonly readyFirst: ReadonlyMap<number, string> | null;
  /**
   * With `flows`: per limit this claim took rows of key '' and priority 0 under, the lowest id
   * it took (what `readyFirst` is for the rows under no limit, for `flowFloors`). Null when none.
   */
  readonly flowFirst: ReadonlyMap<string, string> | null;
  /**
   * The whole claim's look ahead (`dueWithinMs`): in how many ms, by the database's clock, the
   * earliest row it could take comes due — a scheduled row, a retry's backoff, a parked run's
   * wake or deadline — or 0 when it woke parked runs just now (claim again at once: this
   * statement's snapshot cannot see them). Null when nothing comes due within `dueWithinMs`, and
   * for a ready-only claim.
   */
  readonly nextDueMs: number | null;
  /**
   * With `flows`: the ids of the claimed rows that run under a limit, or null for none. Each
   * holds a slot of its limit, or has spent a start, from its claim: the worker starts them
   * ahead of what it has buffered.
   */
  readonly limitedIds: readonly string[] | null;
  /**
   * The whole claim looked for expired leases (`expired`) and found a full batch of them: more
   * may wait past it (a crashed worker held more than one claim's worth). Look again with the
   * next claim rather than at the cadence's next turn. False otherwise, and for a ready-only claim.
   */
  readonly expiredLeft: boolean;
  /**
   * With `expired`: in how many ms, by the database's clock, the earliest lease this claim could
   * take over runs out, within `dueWithinMs` and at most {@link LEASE_DUE_WITHIN_MS}; null when
   * none does, and without `expired`. A live worker's lease is extended when a third of it has
   * passed, so with leases over 3 s this is a lease whose holder stopped extending it.
   */
  readonly leaseDueMs: number | null;
  /**
   * With `flows`: a served limit kept in its list, not in stripes, had a row to take or an
   * expired lease to take over. A claim with `stripedOnly` took none of those: claim again
   * without it.
   */
  readonly listed: boolean;
  /**
   * The claimed rows that come due later (`LeaseClaimInput.aheadMs`): id → in how many ms, by the
   * database's clock, counted from late in the statement (so a wait counted from the answer's
   * arrival ends no earlier than the row's due time). Null when none.
   */
  readonly ahead: ReadonlyMap<string, number> | null;
  /**
   * Per source of `LeaseClaimInput.dueFloors` the whole claim read a row of, the earliest due time
   * among its candidates (taken or not), as `'<µs since the epoch>:<id>'` (with the id, the first in
   * the index's order): no visible, unlocked row of that source lay between its floor and this when
   * the claim ran. For `'parked'`, of the runs due by the claim's `now()` (a sleep it took ahead of
   * its time says nothing of the waits before it that are not sleeps), those it woke for other
   * workers included. For `'due'`, the runs it woke count too: they are scheduled rows, due since
   * those times, once it commits. Null when it read none.
   */
  readonly dueFirst: ReadonlyMap<DueSource, string> | null;
}

/**
 * How far ahead a claim that looks for expired leases looks for the next one to run out (ms).
 * The look reads the leases' index from `now()` on, where a snapshot held elsewhere keeps an entry
 * for every task claimed one lease before: bounded as the look behind (`expiredWithinMs`) is.
 */
export const LEASE_DUE_WITHIN_MS = 2_000;

export const REAP_ERROR = 'lease expired after max attempts (worker crash?)';

/**
 * Reap, then claim, in one statement (so one short transaction; nothing is held afterwards).
 *
 * Reap: a `processing` row whose lease expired with `attempts >= max_attempts` goes `dead`
 * (a poison task that kills its worker every time stops there). Claim: up to `batch` rows,
 * highest `priority` first, then lowest id, taken from three sources — `pending` rows due now
 * (index `<table>_claim`), `pending` rows that were scheduled for later and are due by now
 * (`<table>_due`), and `processing` rows whose lease expired with attempts left (a crashed
 * worker's, `<table>_leased`). Each becomes `processing` for `owner` until `now() + lease`, with
 * `lease_version + 1` and `attempts + 1`. A row waiting behind its ordering group's head is
 * `blocked` and in none of those indexes, nor is a row not yet due or a finished one: what the
 * claim walks follows what it can take, however long a blocked group or a schedule grows. With
 * `readyOnly`, only the first source, and no reap.
 *
 * Locks: the reaped rows and, `FOR UPDATE SKIP LOCKED`, up to `batch` candidates per source, so
 * concurrent claims never take the same row and never wait for each other; candidates not picked
 * are released at commit. Reap and claim touch disjoint rows (attempts at the maximum vs below).
 */
export async function leaseClaim<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  input: LeaseClaimInput,
): Promise<LeaseClaimResult<Row>> {
  const served = servedValues(input);
  const perName = served.perName;
  const literal = isClaimSize(input.batch);
  const flows = table.limitTable !== undefined && input.flows !== undefined && input.flows.length > 0;
  const readyOnly = input.readyOnly === true && !flows;
  const stripedOnly = flows && input.stripedOnly === true;
  const expired = input.expired !== false;
  // the served limits are written into the text (see flowLiterals), so they are part of the key
  const versions = input.versions;
  const key = `leaseClaim:${table.schema}.${table.table}:${literal ? input.batch : 'n'}:${servedKey(servedShape(input))}:${perName ? 'leases' : ''}:${flows ? `flows=${JSON.stringify(input.flows)}${stripedOnly ? ':striped' : ''}` : ''}:${readyOnly ? 'ready' : expired ? 'all' : 'unexpired'}:${table.claimJson === undefined ? 'rows' : 'json'}`;
  const values = {
    owner: input.owner,
    batch: input.batch,
    leaseMs: input.leaseMs,
    ...served.values,
    flowBatch: Math.min(input.batch, input.flowBatch ?? input.batch),
    ...readyRanges(input.readyFloors),
    flowFloors: flows ? input.flows!.map((_, i) => input.flowFloors?.[i] ?? '0') : [],
    // some 30 years: every lease, in the same statement
    expiredWithinMs: input.expiredWithinMs ?? 1e12,
    dueWithinMs: Math.max(0, input.dueWithinMs ?? 0),
    aheadMs: Math.max(0, input.aheadMs ?? 0),
    ...dueFrom('due', input.dueFloors?.get('due')),
    ...dueFrom('parked', input.dueFloors?.get('parked')),
    leaseDueWithinMs: Math.min(LEASE_DUE_WITHIN_MS, Math.max(0, input.dueWithinMs ?? 0)),
  };
  const shape = { table, limit: literal ? input.batch : undefined, names: input.names !== undefined, versions, perName, flows, flowNames: flows ? [...input.flows!] : [], stripedOnly, expired };
  const build = readyOnly ? (v: ClaimValues) => readyClaimStatement(shape, v) : (v: ClaimValues) => claimStatement(shape, v);
  const rows = await executeCached<Record<string, unknown>, typeof values>(executor, key, build, values);
  return claimResult(table, rows, input.owner);
}

/**
 * The values that say which rows a worker serves and how long it leases each, as a claim and a
 * head hand-off both send them; `perName` when some task names have leases of their own.
 */
function servedValues(s: { readonly names?: readonly string[] | undefined; readonly versions?: ClaimVersions | undefined; readonly leaseMsByName?: ReadonlyMap<string, number> | undefined }) {
  const byName = s.leaseMsByName;
  const perName = byName !== undefined && byName.size > 0;
  return {
    perName,
    values: {
      ...servedFilterValues(s),
      leaseNames: perName ? [...byName.keys()] : [],
      leaseValues: perName ? [...byName.values()] : [],
    },
  };
}

// Apart from the async function above: a loop over a thousand rows gets the function it runs in
// optimized while it runs, and this one is small.
function claimResult<Row>(table: LeasedTable<Row>, rows: readonly Record<string, unknown>[], owner: string): LeaseClaimResult<Row> {
  const claimed: Claimed<Row>[] = [];
  const reaped: ReapedRow[] = [];
  let waitMs: number | null = null;
  let promoted = 0;
  let readyFirst: Map<number, string> | null = null;
  let flowFirst: Map<string, string> | null = null;
  let nextDueMs: number | null = null;
  let limitedIds: readonly string[] | null = null;
  let expiredLeft = false;
  let leaseDueMs: number | null = null;
  let listed = false;
  let ahead: Map<string, number> | null = null;
  let dueFirst: Map<DueSource, string> | null = null;
  const json = table.claimJson;
  for (const raw of rows) {
    if (raw.claimed === true) {
      if (raw.ready_first !== null && readyFirst === null) readyFirst = readyFirsts(raw.ready_first as string);
      if (json !== undefined) claimedFromChunk(json, raw.rows as string, owner, claimed);
      else claimed.push(toClaimed(table, withLeaseFields(raw, owner)));
    } else if (raw.claimed === false) reaped.push({ id: String(raw.id), leaseVersion: Number(raw.lease_version) });
    else {
      // the whole claim's own row (see claimStatement)
      waitMs = raw.wait_ms === null ? null : Math.max(0, Number(raw.wait_ms));
      promoted = raw.promoted === null ? 0 : Number(raw.promoted);
      nextDueMs = raw.next_due_ms === null ? null : Math.max(0, Number(raw.next_due_ms));
      limitedIds = (raw.limited_ids as string[] | null) ?? null;
      expiredLeft = raw.expired_left === true;
      leaseDueMs = raw.lease_due_ms == null ? null : Math.max(0, Number(raw.lease_due_ms));
      listed = raw.listed === true;
      const firstNames = raw.flow_first_names as string[] | null | undefined;
      if (firstNames != null && firstNames.length > 0) {
        const firstIds = raw.flow_first_ids as string[];
        flowFirst = new Map(firstNames.map((name, i) => [name, String(firstIds[i])]));
      }
      const aheadIds = raw.ahead_ids as string[] | null | undefined;
      if (aheadIds != null && aheadIds.length > 0) {
        const aheadMs = raw.ahead_ms as number[];
        ahead = new Map(aheadIds.map((id, i) => [String(id), Math.max(0, Number(aheadMs[i]))]));
      }
      if (raw.due_first != null || raw.parked_first != null) {
        dueFirst = new Map();
        if (raw.due_first != null) dueFirst.set('due', String(raw.due_first));
        if (raw.parked_first != null) dueFirst.set('parked', String(raw.parked_first));
      }
    }
  }
  // RETURNING has no order; the design article sorts by id
  claimed.sort(byId);
  return { claimed, reaped, waitMs, promoted, readyFirst, flowFirst, nextDueMs, limitedIds, expiredLeft, leaseDueMs, listed, ahead, dueFirst };
}

function byId(a: { readonly id: string }, b: { readonly id: string }): number {
  return compareIds(a.id, b.id);
}

/**
 * Claim sizes written into the statement as a literal LIMIT: powers of two up to 1024 (the
 * worker claims in these). With `LIMIT $n` PostgreSQL assumes a tenth of the table when it
 * weighs a generic plan, so it re-plans every claim (0.3–0.6 ms of each claim's round trip);
 * with a literal LIMIT the prepared claim settles on its generic plan after five runs. Other
 * sizes stay a parameter, so that callers of any batch size do not fill the server with
 * prepared statements.
 */
export function isClaimSize(batch: number): boolean {
  return batch <= 1024 && (batch & (batch - 1)) === 0;
}

/** What decides the claim statement's text. */
interface ClaimShape extends ServedShape {
  readonly table: LeasedTable<unknown>;
  /** A literal LIMIT (see {@link isClaimSize}), or undefined for a parameter. */
  readonly limit: number | undefined;
  readonly perName: boolean;
  /** Rows under limits too (the table has them and the claim serves some). */
  readonly flows: boolean;
  /** The limits it serves: written into the text (see {@link flowLiterals}). */
  readonly flowNames: readonly string[];
  /** Only the striped limits' part (see `LeaseClaimInput.stripedOnly`). */
  readonly stripedOnly: boolean;
  /** Expired leases and reap too (see `LeaseClaimInput.expired`). */
  readonly expired: boolean;
}

interface ClaimValues {
  readonly owner: string;
  readonly batch: number;
  readonly leaseMs: number;
  readonly names: readonly string[];
  readonly leaseNames: readonly string[];
  readonly leaseValues: readonly number[];
  readonly flowBatch: number;
  readonly versionKeys: readonly string[];
  /** The `ready` source's ranges of the claim index, in claim order (see {@link readyRanges}). */
  readonly readyHigh: readonly number[];
  readonly readyLow: readonly number[];
  readonly readyFrom: readonly string[];
  readonly flowFloors: readonly string[];
  readonly expiredWithinMs: number;
  readonly dueWithinMs: number;
  readonly aheadMs: number;
  /** The `due` and `parked` sources' floors (see `LeaseClaimInput.dueFloors`): due time in µs since the epoch, and id. */
  readonly dueFromMicros: string;
  readonly dueFromId: string;
  readonly parkedFromMicros: string;
  readonly parkedFromId: string;
  readonly leaseDueWithinMs: number;
}

/** The pieces both claim statements share. */
interface ClaimParts {
  readonly t: RawBuilder<unknown>;
  readonly nameFilter: RawBuilder<unknown>;
  readonly limit: RawBuilder<unknown>;
  /** Leaves rows under limits out: those are claimed only through the limits' own sources. */
  readonly unlimited: RawBuilder<unknown>;
  /** The `ready` source: pending rows due now, by claim order. */
  readonly ready: RawBuilder<unknown>;
  /**
   * `claimed AS (UPDATE … WHERE o.id = ANY(ARRAY(SELECT id FROM <from>)) RETURNING …)`, and the
   * CTEs that follow it for resumed rows (see ClaimJson.resumed): `resumable` tells the rows that
   * may carry what their earlier leases recorded.
   */
  readonly claimed: (from: RawBuilder<unknown>, resumable: RawBuilder<unknown>, alsoSet?: RawBuilder<unknown>) => RawBuilder<unknown>;
}

// Interpolates `v` only (see executeCached): everything that shapes the text is in `shape`.
function claimParts(shape: ClaimShape, v: ClaimValues): ClaimParts {
  const { table } = shape;
  const t = tableRef(table);
  const nameFilter = servedFilter(shape, v, table.nameColumn);
  const leaseMs = shape.perName
    ? sql`coalesce((SELECT x.ms FROM unnest(${v.leaseNames}::text[], ${v.leaseValues}::float8[]) AS x(name, ms)
                    WHERE x.name = ${sql.ref(`o.${table.nameColumn}`)}), ${v.leaseMs})`
    : sql`${v.leaseMs}`;
  const limit = shape.limit === undefined ? sql`${v.batch}` : sql.lit(shape.limit);
  const unlimited = table.limitTable === undefined ? sql`` : sql`AND c.flow IS NULL`;
  // The claim index read as ranges in claim order (readyRanges): each priority with a floor
  // from its floor on, past the entries of rows claimed before (see LeaseClaimInput.readyFloors),
  // the priorities between them from their start. Each range takes at most a batch, and the
  // LIMIT stops the loop once a batch is found, so later ranges are not even looked at.
  const pending = sql`c.status = 'pending' AND NOT c.blocked AND NOT c.scheduled ${unlimited}
          -- written as due; only a clock stepped back could make it early
          AND c.available_at <= now() ${nameFilter}`;
  const ready = sql`ready AS (
        SELECT b.id, b.priority
        FROM unnest(${v.readyHigh}::int[], ${v.readyLow}::int[], ${v.readyFrom}::bigint[]) AS g(high, low, from_id)
        -- (the empty ranges that pad the arrays are passed over here, not scanned)
        CROSS JOIN LATERAL (
          SELECT c.id, c.priority FROM ${t} AS c
          WHERE ${pending} AND c.priority <= g.high AND c.priority >= g.low AND c.id >= g.from_id
          ORDER BY c.priority DESC, c.id LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) AS b
        WHERE g.high >= g.low
        LIMIT ${limit}
      )`;
  const claimed = (from: RawBuilder<unknown>, resumable: RawBuilder<unknown>, alsoSet: RawBuilder<unknown> = sql``) => {
    const resumed = table.claimJson?.resumed?.(table, resumable);
    return sql`claimed AS (
        UPDATE ${t} AS o
        SET status = 'processing',
            scheduled = false,${alsoSet}${shape.table.waits ? sql`
            wait_for = NULL,` : sql``}
            lease_owner = ${v.owner},
            lease_until = now() + ${leaseMs} * interval '1 millisecond',
            lease_version = o.lease_version + 1,
            attempts = o.attempts + 1
        -- by the primary key, one lookup per picked id: as a join, a claim of a few hundred rows
        -- from a table of some ten thousand was planned as a hash join over a scan of the whole
        -- table (5.8 against 2.6 ms for 250 rows of 20,000)
        WHERE o.id = ANY(ARRAY(SELECT id FROM ${from}))
        RETURNING ${table.claimJson === undefined ? claimColumns(table, shape.flows) : jsonColumns(table, shape.flows, resumed)}
      )${resumed?.ctes ?? sql``}`;
  };
  return { t, nameFilter, limit, unlimited, ready, claimed };
}

/**
 * The claim of `readyOnly`: the `ready` source alone. Rows come back as the whole claim's do
 * (`claimed` true, the same columns), and nothing is reaped.
 */
function readyClaimStatement(shape: ClaimShape, v: ClaimValues): RawBuilder<Record<string, unknown>> {
  const { ready, claimed } = claimParts(shape, v);
  return sql<Record<string, unknown>>`
      WITH ${ready}, ${claimed(sql`ready`, READY_RESUMABLE)}
      ${shape.table.claimJson === undefined ? sql`SELECT true AS claimed, claimed.*, ${READY_FIRST} AS ready_first FROM claimed` : jsonSelect()}
    `;
}

// Interpolates `v` only (see executeCached): everything that shapes the text is in `shape`.
function claimStatement(shape: ClaimShape, v: ClaimValues): RawBuilder<Record<string, unknown>> {
  const { table } = shape;
  const { t, nameFilter, limit, unlimited, ready, claimed } = claimParts(shape, v);
  // a limit's expired leases on the unlimited ones' cadence and window (LimitClaimParts.expiredWindow)
  const expiredWindow = shape.expired ? sql`AND c.lease_until >= now() - ${v.expiredWithinMs}::float8 * interval '1 millisecond'` : sql`AND false`;
  const limitParts = {
    table,
    t,
    limit,
    nameFilter,
    flows: flowLiterals(shape.flowNames),
    flowBatch: sql`${v.flowBatch}`,
    floors: sql`${v.flowFloors}::bigint[]`,
    expiredWindow,
  };
  const flows = !shape.flows ? sql`` : shape.stripedOnly ? stripedOnlyClaimCtes(limitParts) : limitClaimCtes(limitParts);
  const admitted = shape.flows ? sql`UNION ALL SELECT * FROM flow_taken` : sql``;
  const written = !shape.flows ? sql`` : shape.stripedOnly ? stripedOnlyWriteCtes(limitParts) : limitWriteCtes(limitParts);
  const resumable = !shape.flows ? WHOLE_RESUMABLE : shape.stripedOnly ? WHOLE_RESUMABLE_STRIPED_ONLY : WHOLE_RESUMABLE_WITH_FLOWS;
  // Parked rows due to wake (a sleep over, a wait's deadline) that this claim may take: a source
  // of their own, claimed from `waiting` straight to `processing` (one claim per wake, not a wake
  // and then a claim). Rows under a limit are not: those go through the limit's own sources.
  // A sleep may be taken ahead of its wake (LeaseClaimInput.aheadMs): nothing but time ends it.
  // A signal's or the children's wait is not: what ends it sooner wakes it sooner.
  const parked = table.waits
    ? sql`, parked AS (
        SELECT c.id, c.priority, c.available_at FROM ${t} AS c
        WHERE c.status = 'waiting' AND c.scheduled AND c.available_at <= now() + ${v.aheadMs}::float8 * interval '1 millisecond'
          AND (c.available_at, c.id) >= (${dueFloor(v.parkedFromMicros)}, ${v.parkedFromId}::bigint)
          AND (c.available_at <= now() OR c.wait_for = 'sleep') ${unlimited} ${nameFilter}
        ORDER BY c.available_at, c.id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )`
    : sql``;
  // The other parked rows due (another worker's names or versions, under a limit, or past this
  // claim's batch): back to pending, where the next claim finds them as due rows (this one's
  // snapshot cannot see them change). Not those this claim took (its own locks do not skip them).
  const woken = table.waits
    ? sql`, woken AS (
        UPDATE ${t} AS w SET status = 'pending', scheduled = true, wait_for = NULL
        WHERE w.id = ANY(ARRAY(
          SELECT c.id FROM ${t} AS c WHERE c.status = 'waiting' AND c.scheduled AND c.available_at <= now()
            AND (c.available_at, c.id) >= (${dueFloor(v.parkedFromMicros)}, ${v.parkedFromId}::bigint)
            AND NOT c.id = ANY(ARRAY(SELECT id FROM picked))
          ORDER BY c.available_at, c.id LIMIT ${limit} FOR UPDATE SKIP LOCKED))
        RETURNING w.available_at, w.id
      )`
    : sql``;
  const nextDue = sql`${nextDueCte(shape, v, t, nameFilter, unlimited)}, ${leaseDueCte(shape, v, t, nameFilter, unlimited)}`;
  // without expired leases: the reap's and the expired source's CTEs select nothing, by a
  // constant condition the planner removes, so the statement keeps its shape
  const leases = shape.expired ? sql`AND lease_until >= now() - ${v.expiredWithinMs}::float8 * interval '1 millisecond'` : sql`AND false`;
  const leasesOfC = shape.expired ? sql`AND c.lease_until >= now() - ${v.expiredWithinMs}::float8 * interval '1 millisecond'` : sql`AND false`;
  return sql<Record<string, unknown>>`
      WITH ${shape.flows ? sql`RECURSIVE ` : sql``}doomed AS (
        SELECT id FROM ${t}
        WHERE status = 'processing' AND lease_until < now() AND attempts >= max_attempts ${leases}
        FOR UPDATE SKIP LOCKED
      ), reaped AS (
        UPDATE ${t} AS r
        SET status = 'dead', last_error = ${REAP_ERROR}, lease_owner = NULL, lease_until = NULL
        FROM doomed WHERE r.id = doomed.id
        RETURNING r.id, r.lease_version
      ), ${ready}, due AS (
        SELECT c.id, c.priority, c.available_at FROM ${t} AS c
        WHERE c.status = 'pending' AND c.scheduled AND NOT c.blocked ${unlimited}
          AND c.available_at <= now() + ${v.aheadMs}::float8 * interval '1 millisecond' ${nameFilter}
          AND (c.available_at, c.id) >= (${dueFloor(v.dueFromMicros)}, ${v.dueFromId}::bigint)
        ORDER BY c.available_at, c.id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ), expired AS (
        -- a crashed worker's row: lease expired, attempts left
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.status = 'processing' AND c.lease_until < now() AND c.attempts < c.max_attempts ${leasesOfC} ${unlimited} ${nameFilter}
        ORDER BY c.lease_until, c.id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )${parked}${flows}, picked AS (
        SELECT id FROM (SELECT * FROM ready UNION ALL SELECT id, priority FROM due UNION ALL SELECT * FROM expired
                        ${table.waits ? sql`UNION ALL SELECT id, priority FROM parked` : sql``} ${admitted}) AS candidate
        ORDER BY priority DESC, id
        LIMIT ${limit}
      ), ${claimed(sql`picked`, resumable, shape.flows ? STRIPE_SET : sql``)}${woken}, ${aheadCte(table.waits === true)}, ${nextDue}${written}
      ${table.claimJson === undefined ? rowsWholeSelect(table, shape.flows, limit) : jsonWholeSelect(table, shape.flows, limit)}
    `;
}

/**
 * `next_due (ms)`: in how many ms the earliest row this claim could take once due comes due,
 * within `dueWithinMs` (see `LeaseClaimResult.nextDueMs`), or 0 when the claim woke parked runs.
 * Each source is one index probe that starts at `now()`, past every row due already (and every
 * index entry a long transaction elsewhere keeps of rows claimed before): the scheduled rows by
 * `<table>_due`, parked runs by `<table>_waiting`, and each served limit's by `<table>_flow_due`.
 */
function nextDueCte(shape: ClaimShape, v: ClaimValues, t: RawBuilder<unknown>, nameFilter: RawBuilder<unknown>, unlimited: RawBuilder<unknown>): RawBuilder<unknown> {
  const { table } = shape;
  const ahead = sql`c.available_at > now() AND c.available_at <= now() + ${v.dueWithinMs}::float8 * interval '1 millisecond'`;
  // not the rows this claim took ahead of their time (their index entries are still there: the
  // snapshot is the statement's), usually none, where the picked rows may be a thousand; a row
  // it left within its look ahead is reported
  const notTaken = sql`AND NOT c.id = ANY(ARRAY(SELECT id FROM ahead))`;
  const sources = [
    sql`(SELECT c.available_at FROM ${t} AS c
         WHERE c.status = 'pending' AND c.scheduled AND NOT c.blocked ${unlimited} AND ${ahead} ${nameFilter} ${notTaken}
         ORDER BY c.available_at, c.id LIMIT 1)`,
  ];
  // any worker wakes any parked run (see the woken CTE), so no name filter here either
  if (table.waits) {
    sources.push(sql`(SELECT c.available_at FROM ${t} AS c
         WHERE c.status = 'waiting' AND c.scheduled AND ${ahead} ${notTaken}
         ORDER BY c.available_at, c.id LIMIT 1)`);
  }
  if (shape.flows) {
    const lt = sql.id(table.schema, table.limitTable!);
    sources.push(sql`(SELECT min(n.at) FROM ${lt} AS f
         CROSS JOIN LATERAL (
           SELECT c.available_at AS at FROM ${t} AS c
           WHERE c.flow = f.name AND c.status = 'pending' AND c.scheduled AND NOT c.blocked AND ${ahead}
           ORDER BY c.available_at, c.id LIMIT 1) AS n
         WHERE f.name = ANY(${flowLiterals(shape.flowNames)}::text[]))`);
  }
  const ms = sql`date_part('epoch', least(${sql.join(sources)}) - now()) * 1000`;
  return table.waits ? sql`next_due AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM woken) THEN 0 ELSE ${ms} END AS ms)` : sql`next_due AS (SELECT ${ms} AS ms)`;
}

/**
 * `ahead (id, available_at)`: the claimed rows that come due later (see `LeaseClaimResult.ahead`),
 * reported in ms from `clock_timestamp()` as the statement ends: the worker counts from the
 * answer's arrival, after it, so it never starts a row before the row's time by the database's
 * clock.
 */
function aheadCte(waits: boolean): RawBuilder<unknown> {
  const sources = waits ? sql`SELECT id, available_at FROM due UNION ALL SELECT id, available_at FROM parked` : sql`SELECT id, available_at FROM due`;
  return sql`ahead AS (
        SELECT d.id, d.available_at FROM (${sources}) AS d
        WHERE d.available_at > now() AND d.id = ANY(ARRAY(SELECT id FROM picked))
      )`;
}

/** The summary row's `ahead_ids` and `ahead_ms` (see {@link aheadCte}). */
const AHEAD_COLUMNS = sql`(SELECT array_agg(a.id::text ORDER BY a.id) FROM ahead AS a),
             (SELECT array_agg(date_part('epoch', a.available_at - clock_timestamp()) * 1000 ORDER BY a.id) FROM ahead AS a)`;

/**
 * `lease_due (ms)`: see `LeaseClaimResult.leaseDueMs`. One probe of `<table>_leased` from `now()`
 * on, only in a claim that looks for expired leases (so as often as the look behind it), with the
 * expired sources' own filters (the unlimited one's, and the served limits').
 */
function leaseDueCte(shape: ClaimShape, v: ClaimValues, t: RawBuilder<unknown>, nameFilter: RawBuilder<unknown>, unlimited: RawBuilder<unknown>): RawBuilder<unknown> {
  if (!shape.expired) return sql`lease_due AS (SELECT NULL::float8 AS ms)`;
  // a served limit's rows too: its expired leases are looked for in the same claims (flow_active)
  const served = shape.flows ? sql`AND (c.flow IS NULL OR c.flow = ANY(${flowLiterals(shape.flowNames)}))` : unlimited;
  return sql`lease_due AS (
        SELECT date_part('epoch', c.lease_until - now()) * 1000 AS ms FROM ${t} AS c
        WHERE c.status = 'processing' AND c.lease_until >= now()
          AND c.lease_until <= now() + ${v.leaseDueWithinMs}::float8 * interval '1 millisecond' ${served} ${nameFilter}
        ORDER BY c.lease_until LIMIT 1
      )`;
}

// claimed rows one protocol row each (claimColumns), then the reaped rows and the claim's own
// row: the limits' wait and promotions, and the look ahead (next_due)
function rowsWholeSelect(table: LeasedTable<unknown>, flows: boolean, limit: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
      SELECT true AS claimed, claimed.*, NULL::float8 AS wait_ms, NULL::bigint AS promoted, ${READY_FIRST} AS ready_first,
             NULL::float8 AS next_due_ms, NULL::text[] AS limited_ids, NULL::boolean AS expired_left, NULL::float8 AS lease_due_ms,
             NULL::boolean AS listed, NULL::text[] AS ahead_ids, NULL::float8[] AS ahead_ms,
             NULL::text[] AS flow_first_names, NULL::text[] AS flow_first_ids, NULL::text AS due_first, NULL::text AS parked_first FROM claimed
      UNION ALL
      SELECT false AS claimed, reaped.id, reaped.lease_version, ${nullColumns(table, false, flows)}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM reaped
      UNION ALL
      SELECT NULL AS claimed, ${nullColumns(table, true, flows)},
             ${flows ? sql`(SELECT ms FROM flow_wait)` : sql`NULL`}, ${flows ? sql`(SELECT count(*) FROM flow_promoted)` : sql`NULL`}, NULL,
             (SELECT ms FROM next_due), ${flows ? LIMITED_IDS : sql`NULL`}, ${expiredLeft(limit)}, (SELECT ms FROM lease_due), ${flows ? LISTED : sql`NULL`},
             ${AHEAD_COLUMNS}, ${flows ? FLOW_FIRST_COLUMNS : sql`NULL, NULL`}, ${dueFirstColumns(table.waits === true)}`;
}

/** What a JSON claim's `claimed` CTE returns: what the limits' bookkeeping reads, and the row as JSON (`j`). */
function jsonColumns(table: LeasedTable<unknown>, flows: boolean, resumed: ResumedParts | undefined): RawBuilder<unknown> {
  return sql.join([
    sql`o.id`,
    sql`o.lease_version`,
    ...(flows ? [sql`o.flow`, sql`o.flow_key`, sql`o.priority AS flow_priority`] : []),
    ...(resumed === undefined ? [] : [sql`${resumed.resumed} AS resumed`]),
    sql`${jsonRowText(table.claimJson!, resumed?.value)} AS j`,
  ]);
}

// Rows that may carry what their earlier leases recorded (ClaimJson.resumed): not one taken over
// from an expired lease. Its holder may still be writing: a record it commits after this
// statement's snapshot (its fence holds until this claim's lock) would be missing from what the
// claim read, so such a run reads its records after the claim, as every run did before.
// A ready-only claim takes pending rows alone.
const READY_RESUMABLE = sql`true`;
const WHOLE_RESUMABLE = sql`NOT o.id = ANY(ARRAY(SELECT id FROM expired))`;
// (under limits, the list's takeovers and the stripes')
const WHOLE_RESUMABLE_STRIPED_ONLY = sql`${WHOLE_RESUMABLE} AND NOT o.id = ANY(ARRAY(SELECT id FROM stripe_expired))`;
const WHOLE_RESUMABLE_WITH_FLOWS = sql`${WHOLE_RESUMABLE_STRIPED_ONLY} AND NOT o.id = ANY(ARRAY(SELECT id FROM flow_expired))`;

// the claimed rows as JSON chunks (`rows`), a protocol row each
function jsonSelect(): RawBuilder<unknown> {
  const chunks = jsonChunks();
  return sql`SELECT true AS claimed, ${chunks.text} AS rows, ${READY_FIRST} AS ready_first FROM claimed GROUP BY ${chunks.groupBy}`;
}

/**
 * What `LeaseClaimResult.expiredLeft` reports: the expired source was full (a look without
 * expired leases selects none, so this is false then).
 */
function expiredLeft(limit: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(SELECT count(*) FROM expired) >= ${limit}`;
}

/** What `LeaseClaimResult.listed` reports. */
const LISTED = sql`EXISTS (SELECT 1 FROM flow_active WHERE NOT striped)`;

/** What `LeaseClaimResult.limitedIds` reports (the claimed CTE returns `flow` with limits). */
const LIMITED_IDS = sql`(SELECT array_agg(claimed.id::text) FROM claimed WHERE claimed.flow IS NOT NULL)`;

/**
 * What `LeaseClaimResult.flowFirst` reports: per limit, the lowest id taken of key '' and priority 0
 * (an expired lease taken over counts too, which only lowers it). From the claimed rows alone: a
 * join with `flow_taken` was planned as a nested loop over both, 50 ms for 500 rows.
 */
const FLOW_FIRST_COLUMNS = sql`(SELECT array_agg(m.flow ORDER BY m.flow) FROM (${flowFirstRows()}) AS m),
             (SELECT array_agg(m.id::text ORDER BY m.flow) FROM (${flowFirstRows()}) AS m)`;

function flowFirstRows(): RawBuilder<unknown> {
  return sql`SELECT cl.flow, min(cl.id) AS id FROM claimed AS cl
             WHERE cl.flow IS NOT NULL AND cl.flow_priority = 0 AND cl.flow_key = '' GROUP BY cl.flow`;
}

/** What `LeaseClaimResult.readyFirst` reports, on each chunk: `priority:id,…` (see {@link readyFirsts}). */
const READY_FIRST = sql`(SELECT string_agg(m.priority || ':' || m.id, ',') FROM (SELECT ready.priority, min(ready.id) AS id FROM ready GROUP BY ready.priority) AS m)`;

function readyFirsts(text: string): Map<number, string> {
  const firsts = new Map<number, string>();
  for (const pair of text.split(',')) {
    const at = pair.indexOf(':');
    firsts.set(Number(pair.slice(0, at)), pair.slice(at + 1));
  }
  return firsts;
}

/**
 * The floor of a source read by due time (see `LeaseClaimInput.dueFloors`) as a timestamptz: from
 * the start (`'-infinity'`) for {@link DUE_BEGINNING} and below, else the epoch plus its microseconds.
 */
function dueFloor(micros: string): RawBuilder<unknown> {
  return sql`(CASE WHEN ${micros}::bigint <= ${sql.lit(DUE_BEGINNING_MICROS)}::bigint THEN '-infinity'::timestamptz
                   ELSE 'epoch'::timestamptz + ${micros}::bigint * interval '1 microsecond' END)`;
}

/** A `dueFloors` position (or none) as the claim's values: its due time's µs and its id. */
function dueFrom<S extends DueSource>(source: S, position: string | undefined): Record<`${S}FromMicros` | `${S}FromId`, string> {
  const [micros = '', id = ''] = (position ?? DUE_BEGINNING).split(':');
  if (!/^-?\d+$/.test(micros) || !/^\d+$/.test(id)) throw new TypeError(`dueFloors.${source} must be '<µs>:<id>', got ${JSON.stringify(position)}`);
  return { [`${source}FromMicros`]: micros, [`${source}FromId`]: id } as Record<`${S}FromMicros` | `${S}FromId`, string>;
}

/**
 * What `LeaseClaimResult.dueFirst` reports: `due_first` (the `due` source's earliest candidate, or
 * run it woke) and `parked_first` (the earliest parked run due by now() that it took or woke).
 */
function dueFirstColumns(waits: boolean): RawBuilder<unknown> {
  const first = (rows: RawBuilder<unknown>) =>
    sql`(SELECT ${duePosition('x')} FROM (${rows}) AS x ORDER BY x.available_at, x.id LIMIT 1)`;
  if (!waits) return sql`${first(sql`SELECT d.available_at, d.id FROM due AS d`)}, NULL`;
  // the runs it woke are among the scheduled rows once it commits, with the times they came due
  return sql`${first(sql`SELECT d.available_at, d.id FROM due AS d UNION ALL SELECT w.available_at, w.id FROM woken AS w`)},
             ${first(sql`SELECT p.available_at, p.id FROM parked AS p WHERE p.available_at <= now()
                         UNION ALL SELECT w.available_at, w.id FROM woken AS w`)}`;
}

/** Row `alias`'s position by due time, as `LeaseClaimInput.dueFloors` takes it (`'<µs since the epoch>:<id>'`). */
export function duePosition(alias: string): RawBuilder<string> {
  return sql<string>`(extract(epoch FROM ${sql.ref(`${alias}.available_at`)}) * 1000000)::bigint || ':' || ${sql.ref(`${alias}.id`)}`;
}

const PRIORITY_MAX = 2_147_483_647;
const PRIORITY_MIN = -2_147_483_648;

/**
 * The claim index's ranges the `ready` source reads, in claim order (priority descending): each
 * priority in `floors` alone from its floor, and the priorities between them (and above and below
 * them) from their start. No floors: the whole index from its start, one range.
 */
function readyRanges(floors: ReadonlyMap<number, string> | undefined): Pick<ClaimValues, 'readyHigh' | 'readyLow' | 'readyFrom'> {
  const readyHigh: number[] = [];
  const readyLow: number[] = [];
  const readyFrom: string[] = [];
  const range = (high: number, low: number, from: string) => {
    if (high < low) return;
    readyHigh.push(high);
    readyLow.push(low);
    readyFrom.push(from);
  };
  let above = PRIORITY_MAX;
  for (const p of [...(floors?.keys() ?? [])].sort((a, b) => b - a).slice(0, READY_FLOORS_MAX)) {
    range(above, p + 1, '0');
    range(p, p, floors!.get(p)!);
    above = p - 1;
  }
  range(above, PRIORITY_MIN, '0');
  // Always as many ranges, the rest empty (passed over before any scan): a prepared claim is planned
  // for the number of ranges it is given, and with arrays of one length every time PostgreSQL
  // settles on the generic plan. Given fewer, the custom plans looked cheaper than the generic
  // one (planned for ten), and every claim was planned anew: +0.9 ms per single-job claim.
  while (readyHigh.length < READY_RANGES) {
    readyHigh.push(PRIORITY_MIN);
    readyLow.push(PRIORITY_MAX);
    readyFrom.push('0');
  }
  return { readyHigh, readyLow, readyFrom };
}

/**
 * At most this many priorities get a floor in one claim; the worker keeps no more
 * (`PriorityFloors`). Rows of any other priority are read from the start of their range.
 * @internal
 */
export const READY_FLOORS_MAX = 8;
/** Ranges: each priority with a floor, and the ones before, between and after them. */
const READY_RANGES = 2 * READY_FLOORS_MAX + 1;

// the JSON chunks, then the reaped rows (`id`, `lease_version`) and the claim's own row (see rowsWholeSelect)
function jsonWholeSelect(table: LeasedTable<unknown>, flows: boolean, limit: RawBuilder<unknown>): RawBuilder<unknown> {
  const chunks = jsonChunks();
  return sql`
      SELECT true AS claimed, ${chunks.text} AS rows, NULL::bigint AS id, NULL::bigint AS lease_version,
             NULL::float8 AS wait_ms, NULL::bigint AS promoted, ${READY_FIRST} AS ready_first, NULL::float8 AS next_due_ms,
             NULL::text[] AS limited_ids, NULL::boolean AS expired_left, NULL::float8 AS lease_due_ms, NULL::boolean AS listed,
             NULL::text[] AS ahead_ids, NULL::float8[] AS ahead_ms, NULL::text[] AS flow_first_names, NULL::text[] AS flow_first_ids,
             NULL::text AS due_first, NULL::text AS parked_first
      FROM claimed GROUP BY ${chunks.groupBy}
      UNION ALL
      SELECT false, NULL, reaped.id, reaped.lease_version, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM reaped
      UNION ALL
      SELECT NULL, NULL, NULL, NULL, ${flows ? sql`(SELECT ms FROM flow_wait), (SELECT count(*) FROM flow_promoted)` : sql`NULL, NULL`}, NULL,
             (SELECT ms FROM next_due), ${flows ? LIMITED_IDS : sql`NULL`}, ${expiredLeft(limit)}, (SELECT ms FROM lease_due), ${flows ? LISTED : sql`NULL`},
             ${AHEAD_COLUMNS}, ${flows ? FLOW_FIRST_COLUMNS : sql`NULL, NULL`}, ${dueFirstColumns(table.waits === true)}`;
}

/**
 * The served limits' names as a `text[]` constant in the statement's text, not a parameter: with
 * an array parameter PostgreSQL prices the generic plan for ten limits and keeps re-planning the
 * claim (some 3 ms of each claim's 5); with the names written in, the prepared claim settles on
 * its generic plan (1.6 ms). A worker serves one set of limits for its lifetime, so this is one
 * statement per worker. Each name is dollar-quoted with a tag it does not contain, so any text is
 * taken literally whatever the server's string settings.
 */
function flowLiterals(names: readonly string[]): RawBuilder<unknown> {
  const quoted = names.map((name) => {
    let tag = 'lh';
    for (let i = 0; name.includes(`$${tag}$`); i++) tag = `lh${i}`;
    return `$${tag}$${name}$${tag}$`;
  });
  return sql.raw(`ARRAY[${quoted.join(', ')}]::text[]`);
}

/**
 * What the claim returns per row: the lease columns (see `LEASE_COLUMNS`), then the table's own,
 * then the timestamps again as epoch milliseconds: `lease_until`, `created_at` and, when the
 * table returns it, `available_at` (a lease column, so its type is known). Parsing timestamptz
 * text costs pg some 0.5–1.5 µs per row and the owner's text is known already, so those come
 * back as NULLs of their type and {@link withLeaseFields} fills them in: writing a Date or a
 * string over a NULL keeps the row object's shape (a number there would not). Tables whose
 * claims send JSON (`claimJson`) return {@link jsonColumns} instead.
 */
function claimColumns(table: LeasedTable<unknown>, flows: boolean): RawBuilder<unknown> {
  const o = (c: string) => sql.ref(`o.${c}`);
  const extra = table.extraColumns.filter((c) => !LEASE_COLUMNS.includes(c));
  return sql.join([
    o('id'),
    o('lease_version'),
    o('attempts'),
    o('max_attempts'),
    sql`NULL::text AS lease_owner`,
    sql`NULL::timestamptz AS lease_until`,
    sql`NULL::timestamptz AS created_at`,
    o('group_key'),
    ...extra.map((c) => (c === 'available_at' ? sql`NULL::timestamptz AS available_at` : o(c))),
    sql`date_part('epoch', o.lease_until) * 1000 AS lease_until_ms`,
    sql`date_part('epoch', o.created_at) * 1000 AS created_at_ms`,
    ...(extra.includes('available_at') ? [sql`date_part('epoch', o.available_at) * 1000 AS available_at_ms`] : []),
    // what the limits' bookkeeping needs (see lease-claim-limits.ts), and flow_first
    ...(flows ? [sql`o.flow`, sql`o.flow_key`, sql`o.priority AS flow_priority`] : []),
  ]);
}

/** A claimed row as `toClaimed` reads it: the owner and the dates filled in. */
function withLeaseFields(raw: Record<string, unknown>, owner: string): Record<string, unknown> {
  raw.lease_owner = owner;
  raw.lease_until = new Date(raw.lease_until_ms as number);
  raw.created_at = new Date(raw.created_at_ms as number);
  if (raw.available_at_ms !== undefined) raw.available_at = new Date(raw.available_at_ms as number);
  return raw;
}

/** Orders bigint ids given as strings. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

// The UNION needs the reaped branch (and the limits' row) to have the claimed branch's columns
// (see claimColumns); only id and lease_version carry meaning there, and they come first.
function nullColumns(table: LeasedTable<unknown>, withToken: boolean, flows: boolean) {
  const extra = table.extraColumns.filter((c) => !LEASE_COLUMNS.includes(c));
  return sql.join([
    ...(withToken ? [sql`NULL::bigint`, sql`NULL::bigint`] : []),
    sql`NULL::integer`,
    sql`NULL::integer`,
    sql`NULL::text`,
    sql`NULL::timestamptz`,
    sql`NULL::timestamptz`,
    sql`NULL::text`,
    ...extra.map(() => sql`NULL`),
    sql`NULL::float8`,
    sql`NULL::float8`,
    ...(extra.includes('available_at') ? [sql`NULL::float8`] : []),
    ...(flows ? [sql`NULL::text`, sql`NULL::text`, sql`NULL::integer`] : []),
  ]);
}

/**
 * What a fenced write that finishes heads of ordering groups may claim of their next heads, for
 * the worker that wrote it (see `leaseSettleGroups`): the same filters and lease as its claims.
 */
export interface HeadHandoff {
  readonly owner: string;
  readonly leaseMs: number;
  readonly leaseMsByName?: ReadonlyMap<string, number> | undefined;
  readonly names?: readonly string[] | undefined;
  readonly versions?: ClaimVersions | undefined;
  /** Most next heads to take (the worker's room); none when 0. */
  readonly max: number;
}

/** The pieces of a head hand-off (see {@link HeadHandoff}); only for a table whose claims send JSON. */
export interface HandoffParts {
  /** Conditions on a candidate row (alias `c`) that its claim would also check: due now, not under a limit, of a served name and version. */
  readonly claimable: RawBuilder<unknown>;
  /** `claimed AS (UPDATE …)` of the ids `from` yields, each also unblocked, and what follows it for resumed rows. */
  readonly claimed: (from: RawBuilder<unknown>) => RawBuilder<unknown>;
  /** `SELECT` of the claimed rows as JSON chunks, a row each (column `rows`), for {@link handedRows}. */
  readonly chunks: RawBuilder<unknown>;
}

// Interpolates the hand-off's values as parameters (the settle is planned per call anyway).
export function handoffParts(table: LeasedTable<unknown>, h: HeadHandoff): HandoffParts {
  const served = servedValues(h);
  const shape: ClaimShape = { table, limit: undefined, names: h.names !== undefined, versions: h.versions, perName: served.perName, flows: false, flowNames: [], stripedOnly: false, expired: false };
  const v: ClaimValues = {
    owner: h.owner,
    batch: h.max,
    leaseMs: h.leaseMs,
    ...served.values,
    flowBatch: 0,
    aheadMs: 0,
    ...readyRanges(undefined),
    flowFloors: [],
    ...dueFrom('due', undefined),
    ...dueFrom('parked', undefined),
    expiredWithinMs: 0,
    dueWithinMs: 0,
    leaseDueWithinMs: 0,
  };
  const { nameFilter, unlimited, claimed } = claimParts(shape, v);
  const chunks = jsonChunks();
  return {
    claimable: sql`c.status = 'pending' AND NOT c.scheduled AND c.available_at <= now() ${unlimited} ${nameFilter}`,
    // a pending row that needs no wake: what its resumed records hold is all committed (its
    // previous lease ended in a write that committed before this one's snapshot)
    claimed: (from) => claimed(from, READY_RESUMABLE, sql`
            blocked = false,`),
    // a row per chunk, as the claim returns them: in one text[] pg would parse every quote of the JSON
    chunks: sql`SELECT ${chunks.text} AS rows FROM claimed GROUP BY ${chunks.groupBy}`,
  };
}

/** The rows a hand-off claimed, from its JSON chunks, sorted by id as a claim's are. */
export function handedRows<Row>(table: LeasedTable<Row>, chunks: readonly string[], owner: string): Claimed<Row>[] {
  const json = table.claimJson;
  if (json === undefined || chunks.length === 0) return [];
  const rows: Claimed<Row>[] = [];
  for (const chunk of chunks) claimedFromChunk(json, chunk, owner, rows);
  return rows.sort(byId);
}
