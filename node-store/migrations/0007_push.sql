-- Web Push subscriptions (issue 29): where a needs-you is POSTed, the keys
-- it is encrypted with, and the token whose rights decide what it is sent.
-- Not events: a subscription is a delivery address, not agent history.
CREATE TABLE push_subscriptions (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    kinds      TEXT NOT NULL,
    token      TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX push_by_owner ON push_subscriptions (owner);
CREATE UNIQUE INDEX push_by_endpoint ON push_subscriptions (endpoint);
