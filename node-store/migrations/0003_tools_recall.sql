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
-- lines in a table of its own, `recall_a_<agent name in hex>(k, source, ref,
-- text)`, made by the node the first time the agent has a row (so one agent's
-- search never reads, ranks or returns another's rows). `k` is `kdoc` or
-- `ktr`, indexed, so its documents are found without scanning its lines. The
-- rowid is the seq of the event the row came from. A derived read model:
-- `warren admin rebuild` refolds it from `events`; `recall_meta` says whether
-- the history before this migration was indexed yet (the node does it once).
CREATE TABLE recall_meta (
    built INTEGER NOT NULL
);
-- A stashed document's row in its agent's table, by (agent, name).
CREATE TABLE recall_doc (
    agent     TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    recall_id INTEGER NOT NULL,
    bytes     INTEGER NOT NULL,
    ts        INTEGER NOT NULL,
    PRIMARY KEY (agent, name)
) WITHOUT ROWID;
