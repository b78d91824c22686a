-- Usage reports (`usage_recorded` events: one per turn a CLI reported) are
-- read per conversation: for `usage.get` and for where to resume reading the
-- CLI's usage file.
CREATE INDEX events_usage ON events (conversation, seq) WHERE kind = 'usage_recorded';
