-- Egress decisions (issue 27): a guest's refused (and sampled allowed)
-- connections. Not catalog state: start-up skips them with the other bulk
-- kinds; `egress.audit` reads them per conversation, newest first.
DROP INDEX events_catalog;
CREATE INDEX events_catalog ON events (seq)
    WHERE kind NOT IN ('transcript', 'mail_sent', 'supervision_acted', 'tool_invoked', 'recall_stashed', 'recall_forgot', 'egress');
CREATE INDEX events_egress ON events (conversation, seq) WHERE kind = 'egress';
