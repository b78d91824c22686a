-- The pricing chain's cache (issue 13): the last good live price table, so a
-- node that cannot reach its pricing endpoint prices by what it last fetched
-- before it falls back to the bundled table. One row.
CREATE TABLE pricing_cache (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    table_json TEXT NOT NULL,
    fetched_ms INTEGER NOT NULL
);

-- Live quota as the CLIs show it: Codex's `rate_limits` from its rollouts and
-- Claude Code's usage-limit screen. The newest sample per agent, CLI session
-- and window name.
CREATE TABLE spend_quota (
    agent          TEXT NOT NULL,
    harness        TEXT NOT NULL,
    session        TEXT NOT NULL,
    conversation   TEXT,
    name           TEXT NOT NULL,
    observed_ms    INTEGER NOT NULL,
    used_percent   REAL NOT NULL,
    window_minutes INTEGER,
    resets_at_ms   INTEGER,
    PRIMARY KEY (agent, session, name)
);
