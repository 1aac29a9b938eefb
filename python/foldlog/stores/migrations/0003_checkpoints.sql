-- foldlog PostgreSQL store, schema version 3: checkpoints (docs/retention.md, "Checkpoints").
-- A long session's checkpoint — its surface and the lines of the events the surface reads — so
-- that opening it reads the checkpoint and the rows stored after it, not every row. A cache:
-- written by the session's writer (under its lock) on release and after a compaction, deleted
-- in the transaction of anything that changes rows it covers (an erasure; a deletion cascades).
-- It holds conversation lines: an erasure deletes it and vacuums the table.

CREATE TABLE foldlog.checkpoints (
    session_id text PRIMARY KEY REFERENCES foldlog.sessions (id) ON DELETE CASCADE,
    events     bigint NOT NULL CHECK (events > 0),  -- the events it covers: seqs 0 .. events - 1
    data       bytea NOT NULL,
    written    bigint NOT NULL                       -- epoch ms
);
