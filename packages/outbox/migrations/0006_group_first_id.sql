-- An aggregate's row remembers the id of its first head (first_id), as core's migration 23 does
-- for tasks: a finisher that finds no blocked message past the head it finished looks below it
-- only from there, not from the aggregate's start, so a busy aggregate that empties after each
-- message does not read, at every finish, the outbox_blocked entry of every message it had since a
-- long transaction elsewhere took its snapshot. Null for a row made before this migration or by
-- outbox_add (migration 5): its finisher looks from the start, as before. Additive; applies with
-- dispatchers of the previous version running.
ALTER TABLE :SCHEMA.outbox_group ADD COLUMN first_id bigint;
