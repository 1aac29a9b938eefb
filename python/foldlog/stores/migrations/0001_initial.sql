-- foldlog PostgreSQL store, schema version 1: sessions, events and the append function.
-- Everything lives in the schema "foldlog" so that a shared database keeps its own names.

CREATE SCHEMA IF NOT EXISTS foldlog;

CREATE TABLE foldlog.sessions (
    id          text PRIMARY KEY,
    created     bigint NOT NULL,             -- epoch ms (the header's createdAt when it has one)
    updated     bigint NOT NULL,             -- epoch ms of the last append
    header      text NOT NULL,               -- the header line, without its newline
    last_seq    bigint NOT NULL DEFAULT -1,  -- -1: no event yet
    size        bigint NOT NULL,             -- bytes of the log as read_log returns it
    turns       integer NOT NULL DEFAULT 0,  -- number of turn/start events
    holder      text,                        -- the last writer that opened the session (the lock is the truth)
    preview     text                         -- start of the first user message
);
CREATE INDEX sessions_updated_idx ON foldlog.sessions (updated DESC);

-- One row per event. The line is kept verbatim (key order, number spelling): loading returns the
-- exact bytes that were written. type/time and the reported usage are copied out for queries.
CREATE TABLE foldlog.events (
    session_id    text NOT NULL REFERENCES foldlog.sessions (id) ON DELETE CASCADE,
    seq           bigint NOT NULL,
    type          text NOT NULL,
    time          bigint,
    line          text NOT NULL,
    input_tokens  integer,                   -- usage.prompt_tokens (or input_tokens) of assistant messages
    output_tokens integer,                   -- usage.completion_tokens (or output_tokens)
    PRIMARY KEY (session_id, seq)
);

-- The key of the session-level advisory lock held by a writer's connection.
CREATE FUNCTION foldlog.lock_key(p_session text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT hashtextextended('foldlog:' || p_session, 0) $$;

-- Text of a user message's content, for previews: a string, or the text blocks of a list joined by
-- newlines (callers mask \u0000 escapes first: text cannot hold U+0000).
CREATE FUNCTION foldlog.content_text(p_content json) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE json_typeof(p_content)
        WHEN 'string' THEN p_content #>> '{}'
        WHEN 'array' THEN (SELECT string_agg(b ->> 'text', E'\n') FROM json_array_elements(p_content) AS b
                           WHERE json_typeof(b) = 'object' AND b ->> 'text' IS NOT NULL)
    END
$$;

-- Append one batch of JSONL lines (each ending in a newline) as events first_seq, first_seq+1, …
-- One call = one statement = one transaction: every line is stored or none is.
-- Errors: FLNOS the session does not exist; FLSEQ the batch does not continue the stored log
-- (optimistic check) or a line's own "seq" is not its place in the batch; 22xxx a line is not
-- a JSON object with a string "type" (or not UTF-8).
CREATE FUNCTION foldlog.append(p_session text, p_first bigint, p_count integer, p_lines bytea)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_text     text := convert_from(p_lines, 'UTF8');
    v_last     bigint;
    v_preview  text;
    v_n        bigint;
    v_bad_ord  bigint;
    v_bad_seq  bigint;
    v_new_prev text;
    v_turns    integer;
BEGIN
    SELECT last_seq, preview INTO v_last, v_preview FROM foldlog.sessions WHERE id = p_session;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'FLNOS', MESSAGE = format('session %L does not exist', p_session);
    END IF;
    IF v_last <> p_first - 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'FLSEQ', MESSAGE = format(
            'session %L: the stored log ends at seq %s but the batch starts at seq %s',
            p_session, v_last, p_first);
    END IF;
    IF right(v_text, 1) IS DISTINCT FROM E'\n' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the batch must end with a newline';
    END IF;

    WITH b AS MATERIALIZED (
        SELECT t.ord, t.l, r.type, r.seq, r.time, r.data
        FROM unnest(string_to_array(left(v_text, -1), E'\n')) WITH ORDINALITY AS t (l, ord)
        -- text cannot hold U+0000, so \u0000 escapes are masked for the extracted fields only
        -- (same-shape replacement: the JSON stays valid; the stored line stays verbatim)
        CROSS JOIN LATERAL json_to_record(replace(t.l, '\u0000', '\ufffd')::json)
            AS r (type text, seq bigint, time numeric, data json)
    ), ins AS (
        INSERT INTO foldlog.events (session_id, seq, type, time, line, input_tokens, output_tokens)
        SELECT p_session, p_first + b.ord - 1, b.type, floor(b.time)::bigint, b.l,
               CASE WHEN b.type = 'assistant/message' THEN
                   COALESCE(b.data -> 'usage' ->> 'prompt_tokens', b.data -> 'usage' ->> 'input_tokens')::numeric::integer
               END,
               CASE WHEN b.type = 'assistant/message' THEN
                   COALESCE(b.data -> 'usage' ->> 'completion_tokens',
                            b.data -> 'usage' ->> 'output_tokens')::numeric::integer
               END
        FROM b
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM ins), bad.ord, bad.seq,
           (SELECT count(*) FROM b WHERE b.type = 'turn/start'),
           CASE WHEN v_preview IS NULL THEN
               (SELECT left(foldlog.content_text(b.data -> 'content'), 200) FROM b
                WHERE b.type = 'user/message' ORDER BY b.ord LIMIT 1)
           END
    INTO v_n, v_bad_ord, v_bad_seq, v_turns, v_new_prev
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (
        SELECT b.ord, b.seq FROM b WHERE b.seq IS DISTINCT FROM p_first + b.ord - 1 ORDER BY b.ord LIMIT 1
    ) AS bad ON true;

    IF v_bad_ord IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'FLSEQ', MESSAGE = format(
            'session %L: line %s of the batch has seq %s, expected %s',
            p_session, v_bad_ord, COALESCE(v_bad_seq::text, 'none'), p_first + v_bad_ord - 1);
    END IF;
    IF v_n <> p_count THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'session %L: count says %s lines but the batch holds %s', p_session, p_count, v_n);
    END IF;

    -- the optimistic check again, now under the row lock: nobody moved the log meanwhile
    UPDATE foldlog.sessions
    SET last_seq = p_first + p_count - 1,
        size = size + octet_length(p_lines),
        turns = turns + v_turns,
        updated = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
        preview = COALESCE(preview, v_new_prev)
    WHERE id = p_session AND last_seq = p_first - 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'FLSEQ', MESSAGE = format(
            'session %L changed under the writer while appending seq %s', p_session, p_first);
    END IF;
    RETURN p_first + p_count - 1;
END
$$;
