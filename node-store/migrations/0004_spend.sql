-- The spend ledger (issue 13): what the node has read from the session files
-- of the CLIs it homes. A projection of those files, not of the event log:
-- rows are never deleted, so they outlive the CLI's cleanup of old sessions.

-- Per session file: the agent it belongs to and its `spend::FileState` (JSON:
-- identity, offset of the last complete line, parser state).
CREATE TABLE spend_file (
    path       TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    harness    TEXT NOT NULL,
    state      TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);

-- Per request, keyed by `UsageRecord::key`; replaced only by a record of a
-- greater `rank()` (complete, output, prompt, web searches, in that order).
-- `record` is the whole `UsageRecord` as JSON (the fields pricing and
-- `RecordSet::counted()` need); the columns beside it are for queries.
CREATE TABLE spend_request (
    key             TEXT PRIMARY KEY,
    agent           TEXT NOT NULL,
    harness         TEXT NOT NULL,
    day             TEXT NOT NULL,
    ts_ms           INTEGER NOT NULL,
    model           TEXT NOT NULL,
    session         TEXT NOT NULL,
    conversation    TEXT,
    message_id      TEXT,
    request_id      TEXT,
    sidechain       INTEGER NOT NULL,
    input           INTEGER NOT NULL,
    cache_read      INTEGER NOT NULL,
    cache_write_5m  INTEGER NOT NULL,
    cache_write_1h  INTEGER NOT NULL,
    output          INTEGER NOT NULL,
    rank_complete   INTEGER NOT NULL,
    rank_output     INTEGER NOT NULL,
    rank_prompt     INTEGER NOT NULL,
    rank_web        INTEGER NOT NULL,
    record          TEXT NOT NULL
);
CREATE INDEX spend_request_day ON spend_request (day, agent);
CREATE INDEX spend_request_agent ON spend_request (agent, day);

-- Files that could not be read or had refused lines, with the reason.
CREATE TABLE spend_problem (
    path       TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    refused    INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);
