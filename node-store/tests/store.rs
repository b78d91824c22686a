//! The event store on a real SQLite file: group commit keeps the global
//! sequence gap-free under concurrency, what is acknowledged is there after
//! reopening, replaying the log reproduces the catalog, and the transcript
//! projection rebuilds to exactly what was live.

use std::sync::Arc;

use console_api::AgentCreate;
use node_store::catalog::Catalog;
use node_store::events::{Durability, Event};
use node_store::lifecycle::Transition;
use node_store::store::Store;
use proptest::prelude::*;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn transcript(conversation: &str, seq: u64, text: &str) -> Event {
    Event::Transcript {
        conversation: conversation.into(),
        seq,
        speaker: "agent".into(),
        kind: "reply".into(),
        text: text.into(),
        cursor: None,
    }
}

#[test]
fn concurrent_appends_get_a_gap_free_global_sequence_and_share_commits() {
    rt().block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("t.db")).await.expect("open");
        let mut tasks = vec![];
        for w in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut seqs = vec![];
                for i in 0..50u64 {
                    let durability = if i % 5 == 0 {
                        Durability::Full
                    } else {
                        Durability::Relaxed
                    };
                    let rx = store
                        .enqueue(vec![transcript(&format!("c{w}"), i + 1, "x")], durability)
                        .await
                        .expect("enqueue");
                    let stored = rx.await.expect("reply").expect("commit");
                    seqs.push(stored[0].seq);
                }
                seqs
            }));
        }
        let mut all = vec![];
        for t in tasks {
            let seqs = t.await.expect("task");
            assert!(
                seqs.windows(2).all(|w| w[0] < w[1]),
                "each writer's appends are ordered"
            );
            all.extend(seqs);
        }
        all.sort();
        assert_eq!(all, (1..=800).collect::<Vec<u64>>());
        let commits = store.stats().commits.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            commits < 800,
            "concurrent appends share commits ({commits} commits for 800 events)"
        );
        let (count, max) = store.log_summary().await.expect("summary");
        assert_eq!((count, max), (800, 800));
    });
}

#[test]
fn committed_events_are_published_in_log_order() {
    rt().block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("t.db")).await.expect("open");
        let mut rx = store.subscribe();
        let s2 = store.clone();
        let writer = tokio::spawn(async move {
            for i in 1..=200u64 {
                s2.append(vec![transcript("c", i, "y")]).await.expect("append");
            }
        });
        let mut last = 0;
        for _ in 0..200 {
            let e = rx.recv().await.expect("published");
            assert_eq!(e.seq, last + 1);
            last = e.seq;
        }
        writer.await.expect("writer");
    });
}

#[test]
fn the_transcript_projection_rebuilds_to_what_was_live() {
    rt().block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let live = {
            let store = Store::open(&path).await.expect("open");
            for i in 1..=300u64 {
                let conv = format!("c{}", i % 3);
                store
                    .append(vec![transcript(
                        &conv,
                        i.div_ceil(3),
                        &format!("line {i}\nwith ünïcode ✓"),
                    )])
                    .await
                    .expect("append");
            }
            store.transcript_digest().await.expect("digest")
        };
        assert_eq!(live.len(), 300);
        let replayed = Store::rebuild_transcript(&path).await.expect("rebuild");
        assert_eq!(replayed, 300);
        let store = Store::open(&path).await.expect("reopen");
        assert_eq!(store.transcript_digest().await.expect("digest"), live);
        assert_eq!(store.transcript_last_seq("c1").await.expect("last"), 100);
        let page = store.transcript_from("c2", 10, 5).await.expect("page");
        assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![10, 11, 12, 13, 14]);
    });
}

/// A random command against the catalog.
#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    Update(u8, String),
    Archive(u8),
    Start(u8),
    Move(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4).prop_map(Op::Create),
        (0u8..4, "[a-z ]{0,12}").prop_map(|(a, p)| Op::Update(a, p)),
        (0u8..4).prop_map(Op::Archive),
        (0u8..4).prop_map(Op::Start),
        (0u8..8, 0u8..4).prop_map(|(c, t)| Op::Move(c, t)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever sequence of commands ran, folding the stored log (after
    /// reopening the file) gives exactly the catalog the node held live.
    #[test]
    fn replaying_the_stored_log_equals_the_live_catalog(ops in proptest::collection::vec(op(), 1..40)) {
        rt().block_on(async {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("t.db");
            let store = Store::open(&path).await.expect("open");
            let mut live = Catalog::default();
            let mut convs: Vec<String> = vec![];
            for op in ops {
                let decided: Option<Event> = match op {
                    Op::Create(a) => live.decide_create_agent(AgentCreate {
                        name: format!("agent-{a}"), harness: "fake".into(), persona: None, model: None, grants: None, rules: None, resources: None, budget: None, workspace: None,
                    }).ok(),
                    Op::Update(a, p) => live.decide_update_agent(console_api::AgentUpdate {
                        agent: format!("agent-{a}"), persona: Some(p), model: None, grants: None, rules: None, resources: None,
                    }).ok(),
                    Op::Archive(a) => live.decide_archive_agent(&format!("agent-{a}")).ok(),
                    Op::Start(a) => {
                        let name = format!("agent-{a}");
                        if live.check_can_start(&name).is_ok() && live.live_conversation_of(&name).is_none() {
                            let id = format!("c-{}", convs.len());
                            convs.push(id.clone());
                            Some(Event::ConversationCreated { id, agent: name, resume_ref: Some("r".into()), login: false })
                        } else {
                            None
                        }
                    }
                    Op::Move(c, t) => {
                        let t = [Transition::Launched, Transition::Pause, Transition::Continue, Transition::Terminate][t as usize];
                        convs.get(c as usize).and_then(|id| live.decide_transition(id, t, "why").ok())
                    }
                };
                if let Some(e) = decided {
                    for stored in store.append(vec![e]).await.expect("append") {
                        live.apply(&stored);
                    }
                }
            }
            drop(store);
            let reopened = Store::open(&path).await.expect("reopen");
            let replayed = Catalog::fold(&reopened.catalog_events().await.expect("events"));
            assert_eq!(replayed, live);
            // At most one live conversation per agent, whatever happened.
            for name in live.agents.keys() {
                assert!(live.conversations.values().filter(|c| &c.agent == name && c.state.is_live()).count() <= 1);
            }
        });
    }
}

#[test]
fn a_store_shared_by_arc_survives_its_handles() {
    // Dropping every handle stops the writer; a new open sees everything.
    rt().block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = Arc::new(Store::open(&path).await.expect("open"));
        store.append(vec![transcript("c", 1, "kept")]).await.expect("append");
        drop(store);
        let again = Store::open(&path).await.expect("reopen");
        assert_eq!(again.transcript_from("c", 1, 10).await.expect("read")[0].text, "kept");
    });
}

/// History written before recall existed is indexed once when the store
/// opens; lines of one agent never answer another's search.
#[test]
fn recall_indexes_earlier_history_once_and_keeps_agents_apart() {
    rt().block_on(async {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("w.db");
        let created = |id: &str, agent: &str| Event::ConversationCreated {
            id: id.into(),
            agent: agent.into(),
            resume_ref: None,
            login: false,
        };
        {
            let store = Store::open(&db).await.expect("open");
            store
                .append(vec![
                    created("c-a", "ann"),
                    created("c-b", "bo-b"),
                    transcript("c-a", 1, "the zebra crossing is closed"),
                    transcript("c-b", 1, "bob saw a zebra too"),
                ])
                .await
                .expect("append");
            assert_eq!(
                store.recall_search("ann", "\"zebra\"", 10).await.expect("search").len(),
                1
            );
        }
        // As an older node left it: no recall tables, not yet backfilled.
        {
            use sqlx::ConnectOptions;
            let mut c = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&db)
                .connect()
                .await
                .expect("connect");
            for t in ["recall_a_616e6e", "recall_a_626f2d62"] {
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {t}")))
                    .execute(&mut c)
                    .await
                    .expect("drop");
            }
            sqlx::query("DELETE FROM recall_meta")
                .execute(&mut c)
                .await
                .expect("meta");
        }
        let store = Store::open(&db).await.expect("reopen");
        let hits = store.recall_search("ann", "\"zebra\"", 10).await.expect("search");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].reference, "c-a#1");
        let bob = store.recall_search("bo-b", "\"zebra\"", 10).await.expect("search");
        assert_eq!(bob.len(), 1);
        assert!(bob[0].text.contains("bob saw"));
        assert!(
            store
                .recall_search("nobody", "\"zebra\"", 10)
                .await
                .expect("search")
                .is_empty()
        );
        drop(store);
        // Once: a second open adds nothing twice.
        let store = Store::open(&db).await.expect("reopen");
        assert_eq!(
            store.recall_search("ann", "\"zebra\"", 10).await.expect("search").len(),
            1
        );
    });
}
