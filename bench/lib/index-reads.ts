// What the scripts that hold the MVCC horizon beside a drain (bench/*-pinned.ts) read off the
// server: each index's scans and the entries they read, as pg_stat_user_indexes counts them.
import type pg from 'pg';

/** Per index of `schema`: its scans and the index entries they read. */
export type IndexReads = Map<string, { scans: number; entries: number }>;

/** The counts as the server has them now (a session's reach them as it reports: at its end at the latest). */
export async function indexReads(pool: pg.Pool, schema: string): Promise<IndexReads> {
  const { rows } = await pool.query<{ name: string; scans: string; entries: string }>(
    `SELECT indexrelname AS name, idx_scan AS scans, idx_tup_read AS entries FROM pg_stat_user_indexes WHERE schemaname = $1`,
    [schema],
  );
  return new Map(rows.map((r) => [r.name, { scans: Number(r.scans), entries: Number(r.entries) }]));
}

/** The counts once the sessions just ended have reported theirs: read until two reads agree. */
export async function settledIndexReads(pool: pg.Pool, schema: string): Promise<IndexReads> {
  let after = await indexReads(pool, schema);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 750));
    const next = await indexReads(pool, schema);
    const same = [...next].every(([k, v]) => v.scans === after.get(k)?.scans && v.entries === after.get(k)?.entries);
    after = next;
    if (same) break;
  }
  return after;
}

/** Entries read per scan of each of `indexes` between two readings ('—' where none scanned it). */
export function entriesPerScan(before: IndexReads, after: IndexReads, indexes: readonly string[]): string[] {
  return indexes.map((name) => {
    const [a, b] = [after.get(name), before.get(name)];
    const scans = (a?.scans ?? 0) - (b?.scans ?? 0);
    return scans === 0 ? '—' : `${Math.round(((a?.entries ?? 0) - (b?.entries ?? 0)) / scans).toLocaleString('en-US')}`;
  });
}
