import { sql, type RawBuilder } from 'kysely';
import { LIMITED_READY } from './limit-stripes.js';

/** What {@link limitedReadyRanges} reads. */
export interface LimitedReadyScan {
  /** `"schema"."task"` */
  readonly t: RawBuilder<unknown>;
  /** The limit's name (a column of the row the scan is run for). */
  readonly flow: RawBuilder<unknown>;
  /** The lowest id of key '' and priority 0 to read (a bigint column; 0 for every one). */
  readonly floor: RawBuilder<unknown>;
  /** More conditions on `c` (`AND …`), or nothing. */
  readonly where: RawBuilder<unknown>;
  /** What each branch selects from `c`. */
  readonly columns: RawBuilder<unknown>;
  /** Most rows per branch. */
  readonly limit: RawBuilder<unknown>;
  /** Lock each row as it is read (`FOR UPDATE SKIP LOCKED`). */
  readonly lock: boolean;
}

/**
 * One limit's ready rows (alias `c`), in its index's order (`task_flow_ready`: key, priority
 * descending, id), leaving out the rows of key '' and priority 0 below `floor`: a claim that
 * starts there skips the index entries of rows claimed before, which vacuum cannot remove while
 * a long transaction elsewhere holds the horizon (docs/operations.md, "Long transactions
 * elsewhere"; the worker's `LimitFloors` says which ids are safe to skip). Five ranges of the
 * index, read one after another (an Append runs its branches in order, and the caller's LIMIT
 * stops it): key '' above priority 0, key '' at priority 0 from the floor, key '' below
 * priority 0, the other keys, and no key. Each a subquery of its own: a set operation's branch
 * may not lock rows itself. The caller wraps them: `SELECT … FROM (<these>) AS r LIMIT n`.
 */
export function limitedReadyRanges(s: LimitedReadyScan): RawBuilder<unknown> {
  const branch = (range: RawBuilder<unknown>) => sql`SELECT * FROM (
            SELECT ${s.columns} FROM ${s.t} AS c
            WHERE c.flow = ${s.flow} AND ${range} AND ${LIMITED_READY} ${s.where}
            ORDER BY c.flow_key, c.priority DESC, c.id
            LIMIT ${s.limit}${s.lock ? sql` FOR UPDATE SKIP LOCKED` : sql``}) AS b`;
  return sql.join(
    [
      branch(sql`c.flow_key = '' AND c.priority > 0`),
      // written as ranges, not equalities: with key and priority fixed, the order is the primary
      // key's too, and the planner took that index for this branch (walking every row of the
      // table from the floor); as ranges, only the limit's index gives the order, and its scan
      // starts at (limit, '', 0, floor)
      branch(sql`c.flow_key >= '' AND c.flow_key <= '' AND c.priority >= 0 AND c.priority <= 0 AND c.id >= ${s.floor}`),
      branch(sql`c.flow_key = '' AND c.priority < 0`),
      branch(sql`c.flow_key > ''`),
      branch(sql`c.flow_key IS NULL`),
    ],
    sql`
          UNION ALL
          `,
  );
}
