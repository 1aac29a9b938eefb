-- foldlog PostgreSQL store, schema version 2: media stored once (docs/retention.md).
-- The bytes of the images, audio and files that messages carry, one row per distinct content
-- (keyed by its SHA-256), shared by every session of the database; an event holds a reference
-- to its row instead of the base64 data (docs/log-format.md, "Media references").

CREATE TABLE foldlog.media (
    sha256   text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size     bigint NOT NULL,
    data     bytea NOT NULL,
    created  bigint NOT NULL,   -- epoch ms of the first store
    touched  bigint NOT NULL    -- epoch ms of the last store (an append referencing it again)
);
-- images, audio and PDFs are compressed already: kept out of line, not compressed again
ALTER TABLE foldlog.media ALTER COLUMN data SET STORAGE EXTERNAL;
