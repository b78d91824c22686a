-- Tool invocations and recall documents are not catalog state: start-up
-- skips them with the other bulk kinds.
DROP INDEX events_catalog;
CREATE INDEX events_catalog ON events (seq)
    WHERE kind NOT IN ('transcript', 'mail_sent', 'supervision_acted', 'tool_invoked', 'recall_stashed', 'recall_forgot');
-- The owner reads tool invocations newest first.
CREATE INDEX events_tools ON events (seq) WHERE kind = 'tool_invoked';

-- Which agent each conversation belongs to, so a transcript line can be
-- indexed into its agent's recall as it is written. Rebuildable from `events`.
CREATE TABLE conversation_agent (
    conversation TEXT PRIMARY KEY,
    agent        TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO conversation_agent (conversation, agent)
    SELECT conversation, json_extract(body, '$.agent') FROM events
    WHERE kind = 'conversation_created' AND json_extract(body, '$.agent') IS NOT NULL;

-- Recall (SQLite FTS5): each agent's stashed documents and its own transcript
-- lines, searched with bm25 and always confined to one agent. `akey` holds
-- two indexed tokens, the agent's name in hex and `kdoc` or `ktranscript`,
-- so a search intersects with its agent's rows (and one source) inside the
-- index instead of reading every match's row. The rowid is the seq of the
-- event the row came from. A derived read model:
-- `warren admin rebuild` refolds it from `events`.
CREATE VIRTUAL TABLE recall USING fts5(
    akey,
    source UNINDEXED,
    ref UNINDEXED,
    text,
    tokenize = 'unicode61 remove_diacritics 2'
);
-- A stashed document's row in `recall`, by (agent, name).
CREATE TABLE recall_doc (
    agent     TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    recall_id INTEGER NOT NULL,
    bytes     INTEGER NOT NULL,
    ts        INTEGER NOT NULL,
    PRIMARY KEY (agent, name)
) WITHOUT ROWID;
INSERT INTO recall (rowid, akey, source, ref, text)
    SELECT t.event_seq, lower(hex(ca.agent)) || ' ktranscript', 'transcript', t.conversation || '#' || t.seq, t.text
    FROM transcript t JOIN conversation_agent ca ON ca.conversation = t.conversation
    WHERE t.text != '';
