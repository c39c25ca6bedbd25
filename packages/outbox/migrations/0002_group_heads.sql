-- Claims look only at rows they can take (a long queue behind one group, or rows scheduled for
-- later, used to be walked by every claim). Two markers on pending rows keep the rest out of the
-- claim's indexes, and a row per ordering group serialises the group's writers:
--   blocked:   the row waits behind an earlier unfinished row of its group. Only a group's head
--              (its one unfinished row with blocked = false) is ever a claim candidate. Whoever
--              finishes the head (fenced finalize to done, skip of a dead head) unblocks the next
--              row in the same transaction, under the group's row lock.
--   scheduled: the row's available_at lay in the future when it was written; once due, the claim
--              finds it through outbox_due. Rows not yet due sit in no index the claim walks.
-- Stop workers and producers of the older version before applying this: they neither set nor
-- honour the markers.
ALTER TABLE :SCHEMA.outbox
  ADD COLUMN blocked boolean NOT NULL DEFAULT false,
  ADD COLUMN scheduled boolean NOT NULL DEFAULT false;

-- the group index's name is taken by the table below; outbox_blocked replaces it
DROP INDEX :SCHEMA.outbox_group;

-- One row per ordering group that has unfinished rows (pending, processing or dead). Producers
-- and finishers of a group upsert it first, in one global order: a row lock, held until commit,
-- that serialises them (so ids follow commit order inside a group) and, unlike an advisory lock,
-- takes no slot in the server's shared lock table however many groups a transaction touches.
CREATE TABLE :SCHEMA.outbox_group (
  group_key text PRIMARY KEY,
  -- the group's head: its one unfinished row that is not blocked; null until the next is chosen
  head_id bigint,
  -- written by every producer and finisher of the group: a transaction in REPEATABLE READ that
  -- read the group before a concurrent writer committed fails instead of acting on stale rows
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- existing groups: the lowest unfinished row is the head, every later pending row waits
INSERT INTO :SCHEMA.outbox_group (group_key, head_id)
SELECT group_key, min(id) FROM :SCHEMA.outbox
WHERE group_key IS NOT NULL AND status IN ('pending', 'processing', 'dead')
GROUP BY group_key;

UPDATE :SCHEMA.outbox AS t SET blocked = true
FROM :SCHEMA.outbox_group AS g
WHERE t.group_key = g.group_key AND t.id > g.head_id AND t.status = 'pending';

UPDATE :SCHEMA.outbox SET scheduled = true WHERE status = 'pending' AND available_at > now();

-- the claim's three sources, none holding a row the claim cannot take:
-- due now, in claim order (outbox_claim); due since it was scheduled (outbox_due); and a crashed
-- worker's expired lease (outbox_leased, from migration 1)
DROP INDEX :SCHEMA.outbox_claim_order;
DROP INDEX :SCHEMA.outbox_ready;
CREATE INDEX outbox_claim ON :SCHEMA.outbox (priority DESC, id)
  WHERE status = 'pending' AND NOT blocked AND NOT scheduled;
CREATE INDEX outbox_due ON :SCHEMA.outbox (available_at, id)
  WHERE status = 'pending' AND scheduled AND NOT blocked;
-- "the next row of this group", for the finisher of its head
CREATE INDEX outbox_blocked ON :SCHEMA.outbox (group_key, id) WHERE blocked;
