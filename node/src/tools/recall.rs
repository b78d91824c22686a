//! Recall on the node (seed 002 §4's SearchableBucket): `recall.search`,
//! `recall.stash`, `recall.forget` over the agent's FTS5 read model
//! (`store/recall.rs`). The query language and the limits are the `recall`
//! crate's; an instance token searches and stashes only its own agent's.

use serde_json::{Value, json};

use super::Tools;
use crate::service::{NodeError, NodeResult};
use node_store::events::Event;

fn invalid(e: recall::RecallError) -> NodeError {
    NodeError::Invalid(e.to_string())
}

impl Tools {
    /// `recall.search {agent, query, limit?}`: bm25-ranked hits with snippets.
    pub async fn recall_search(&self, p: console_api::RecallSearch) -> NodeResult<Value> {
        self.catalog.lock().await.agent(&p.agent)?;
        let limit = p.limit.unwrap_or(10);
        if limit == 0 || limit > recall::MAX_HITS {
            return Err(NodeError::Invalid(format!(
                "limit: {limit} is outside 1..={}",
                recall::MAX_HITS
            )));
        }
        let fts = recall::fts_query(&p.query).map_err(invalid)?;
        let words = recall::query_words(&p.query);
        let hits = self.store.recall_search(&p.agent, &fts, limit).await?;
        let hits: Vec<console_api::RecallHit> = hits
            .into_iter()
            .map(|h| console_api::RecallHit {
                snippet: recall::snippet(&h.text, &words),
                source: h.source,
                reference: h.reference,
                score: h.score,
            })
            .collect();
        Ok(json!({ "hits": hits }))
    }

    /// `recall.stash {agent, name, text}`: adds (or replaces) a document.
    pub async fn recall_stash(&self, p: console_api::RecallStash) -> NodeResult<Value> {
        recall::check_doc(&p.name, &p.text).map_err(invalid)?;
        let bytes = p.text.len();
        let e = Event::RecallStashed {
            agent: p.agent.clone(),
            name: p.name.clone(),
            text: p.text,
        };
        {
            let cat = self.catalog.lock().await;
            cat.agent(&p.agent)?;
        }
        let stored = self.store.append(vec![e]).await?;
        let seq = stored.first().map(|s| s.seq).unwrap_or(0);
        Ok(json!({ "doc": { "name": p.name, "bytes": bytes, "seq": seq } }))
    }

    /// `recall.forget {agent, name}`.
    pub async fn recall_forget(&self, p: console_api::RecallForget) -> NodeResult<Value> {
        recall::check_name(&p.name).map_err(invalid)?;
        self.catalog.lock().await.agent(&p.agent)?;
        if !self.store.recall_has_doc(&p.agent, &p.name).await? {
            return Err(NodeError::NotFound(format!(
                "agent {:?} has no stashed document {:?}",
                p.agent, p.name
            )));
        }
        let e = Event::RecallForgot {
            agent: p.agent.clone(),
            name: p.name.clone(),
        };
        self.store.append(vec![e]).await?;
        Ok(json!({ "forgotten": p.name }))
    }
}
