//! Transcript appends: assigns each conversation's gap-free `seq` and hands the
//! event to the store. Seq assignment and enqueueing happen under one lock so
//! the writer commits (and publishes) every conversation's events in seq order.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Mutex;

use node_store::events::{Durability, Event, StoredEvent};
use node_store::store::{Store, StoreError};

pub struct Transcripts {
    store: Store,
    next: Mutex<HashMap<String, u64>>,
}

impl Transcripts {
    pub fn new(store: Store) -> Transcripts {
        Transcripts {
            store,
            next: Mutex::new(HashMap::new()),
        }
    }

    /// Appends one attributed event and waits for its commit. Returns its seq.
    pub async fn append(&self, conversation: &str, speaker: &str, kind: &str, text: String) -> Result<u64, StoreError> {
        self.append_at(conversation, speaker, kind, text, None).await
    }

    /// Like `append`, for an event read from the CLI's session file up to `cursor`.
    pub async fn append_at(
        &self,
        conversation: &str,
        speaker: &str,
        kind: &str,
        text: String,
        cursor: Option<u64>,
    ) -> Result<u64, StoreError> {
        let (seq, rx) = {
            let mut next = self.next.lock().await;
            let seq = match next.get(conversation) {
                Some(s) => *s,
                None => self.store.transcript_last_seq(conversation).await? + 1,
            };
            let event = Event::Transcript {
                conversation: conversation.to_string(),
                seq,
                speaker: speaker.to_string(),
                kind: kind.to_string(),
                text,
                cursor,
            };
            let rx = self.store.enqueue(vec![event], Durability::Relaxed).await?;
            next.insert(conversation.to_string(), seq + 1);
            (seq, rx)
        };
        match rx.await {
            Ok(Ok(_)) => Ok(seq),
            Ok(Err(e)) => {
                // Not stored: forget the counter so the next append re-reads it.
                self.next.lock().await.remove(conversation);
                Err(e)
            }
            Err(_) => Err(StoreError::WriterGone),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// The transcript fields of a committed event, if it is one.
pub fn as_transcript(e: &Arc<StoredEvent>) -> Option<console_api::TranscriptEvent> {
    match &e.event {
        Event::Transcript {
            conversation,
            seq,
            speaker,
            kind,
            text,
            ..
        } => Some(console_api::TranscriptEvent {
            conversation: conversation.clone(),
            seq: *seq,
            ts: e.ts,
            speaker: speaker.clone(),
            kind: kind.clone(),
            text: text.clone(),
        }),
        _ => None,
    }
}
