-- The append-only event log: the single source of truth. Global sequence = seq.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY,
    ts           INTEGER NOT NULL,
    kind         TEXT    NOT NULL,
    conversation TEXT,
    body         TEXT    NOT NULL
);

-- Start-up folds only the catalog events (agents, conversations, revocations,
-- mail cursors); this partial index lets it skip transcript deltas and mail,
-- which are the bulk of the log.
CREATE INDEX events_catalog ON events (seq) WHERE kind NOT IN ('transcript', 'mail_sent', 'supervision_acted');

-- The supervision audit log (seed 000's supervision_log) is its events: one
-- per attempted or declined action, read newest first.
CREATE INDEX events_audit ON events (seq) WHERE kind = 'supervision_acted';

-- Projection of the transcript events, keyed for ranged reads per conversation.
-- Rows are appended in log order (rowid = the event's seq), so a commit writes
-- a few sequential pages plus small index entries. Rebuildable from `events`
-- (warren admin rebuild).
CREATE TABLE transcript (
    event_seq    INTEGER PRIMARY KEY,
    conversation TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    ts           INTEGER NOT NULL,
    speaker      TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    cursor       INTEGER
);
CREATE UNIQUE INDEX transcript_by_conversation ON transcript (conversation, seq);

-- Projection of the mailbox: every message sent, by recipient. The inbox
-- cursor is the event's seq. Rebuildable from `events` (warren admin rebuild).
CREATE TABLE mail (
    event_seq INTEGER PRIMARY KEY,
    id        TEXT    NOT NULL UNIQUE,
    ts        INTEGER NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    context   TEXT,
    body      TEXT    NOT NULL
);
CREATE INDEX mail_by_recipient ON mail (recipient, event_seq);
