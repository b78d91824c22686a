//! The catalog's mail decisions: a send (to an agent here, or `NAME@NODE` on
//! another member) and an ack, decided by the `mailbox` crate from the
//! sender's current grants.

use super::{Catalog, CatalogError};
use crate::events::Event;
use crate::validate::Invalid;

/// Refusals of mail handed to other members the catalog remembers.
pub const MAX_MAIL_REFUSALS: usize = 1000;

impl Catalog {
    /// A message from `from` to `to`: `from` must be an agent here, and so
    /// must `to` unless it is `NAME@NODE` (an agent on another member, whose
    /// home decides about it when it takes the message); the mailbox decides
    /// the rest (`mailbox::decide_send`) from `from`'s current grants.
    pub fn decide_mail_send(&self, p: console_api::MailSend, id: String) -> Result<Event, CatalogError> {
        let sender = self.agent(&p.from)?;
        let recipient_archived = match p.to.contains('@') {
            true => false,
            false => self.agent(&p.to)?.archived,
        };
        let peers = peers_of(&sender.record.grants.peers);
        mailbox::decide_send(&mailbox::SendCheck {
            from: &p.from,
            to: &p.to,
            peers: &peers,
            recipient_archived,
            body: &p.body,
            context: p.context.as_deref(),
        })
        .map_err(mail_error)?;
        Ok(Event::MailSent {
            id,
            from: p.from,
            to: p.to,
            context: p.context,
            body: p.body,
        })
    }

    /// Moves `agent`'s inbox cursor forward, at most to `last` (the seq of
    /// its newest message): never back, `None` if it would not move.
    pub fn decide_mail_ack(&self, agent: &str, cursor: u64, last: u64) -> Result<Option<Event>, CatalogError> {
        self.agent(agent)?;
        let current = self.mail_cursors.get(agent).copied().unwrap_or(0);
        Ok(
            mailbox::decide_ack(current, cursor, last).map(|cursor| Event::MailAcked {
                agent: agent.to_string(),
                cursor,
            }),
        )
    }
}

/// A mailbox refusal as the catalog reports it.
fn mail_error(e: mailbox::MailError) -> CatalogError {
    match e {
        mailbox::MailError::Forbidden { .. } => CatalogError::Forbidden(e.to_string()),
        mailbox::MailError::Invalid { field, reason } => CatalogError::Invalid(Invalid { field, problem: reason }),
        other => CatalogError::Invalid(Invalid {
            field: "body",
            problem: other.to_string(),
        }),
    }
}

/// `grants.peers` as the mailbox reads it.
pub fn peers_of(v: &Option<serde_json::Value>) -> mailbox::Peers {
    match v {
        Some(serde_json::Value::String(s)) if s == "all" => mailbox::Peers::All,
        Some(serde_json::Value::Array(items)) => {
            mailbox::Peers::List(items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
        }
        _ => mailbox::Peers::None,
    }
}
