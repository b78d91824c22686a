-- Mail to agents homed on other members (issue 30): its rows in `mail` have
-- a recipient `NAME@NODE`. The outbox reads them past each member's
-- handed-over seq; this partial index keeps that read off local mail.
CREATE INDEX mail_remote ON mail (event_seq) WHERE instr(recipient, '@') > 0;
