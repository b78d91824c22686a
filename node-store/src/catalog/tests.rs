//! The catalog's decisions and folds, by table.

use super::*;

fn stored(seq: u64, event: Event) -> StoredEvent {
    StoredEvent {
        seq,
        ts: seq * 10,
        event,
    }
}

fn create(name: &str) -> console_api::AgentCreate {
    console_api::AgentCreate {
        name: name.into(),
        harness: "fake".into(),
        persona: None,
        model: None,
        grants: None,
        rules: None,
        resources: None,
        budget: None,
        workspace: None,
    }
}

/// Applies decisions as the node does: decide, stamp, fold.
struct Log {
    catalog: Catalog,
    events: Vec<StoredEvent>,
}

impl Log {
    fn new() -> Log {
        Log {
            catalog: Catalog::default(),
            events: vec![],
        }
    }
    fn commit(&mut self, e: Event) {
        let s = stored(self.events.len() as u64 + 1, e);
        self.catalog.apply(&s);
        self.events.push(s);
    }
}

#[test]
fn agents_are_created_once_and_validated() {
    let mut log = Log::new();
    let e = log.catalog.decide_create_agent(create("coder")).expect("create");
    log.commit(e);
    assert!(matches!(
        log.catalog.decide_create_agent(create("coder")),
        Err(CatalogError::Conflict(_))
    ));
    let mut bad = create("ok");
    bad.harness = "emacs".into();
    assert!(matches!(
        log.catalog.decide_create_agent(bad),
        Err(CatalogError::Invalid(_))
    ));
    let mut bad = create("ok");
    bad.rules = Some(vec![console_api::FakeRule {
        pattern: "(".into(),
        actions: vec![],
    }]);
    let err = log.catalog.decide_create_agent(bad).expect_err("bad regex");
    assert!(err.to_string().contains("not a valid regex"));
}

#[test]
fn lifecycle_through_the_catalog_and_replay_matches() {
    let mut log = Log::new();
    let e = log.catalog.decide_create_agent(create("a")).expect("create");
    log.commit(e);
    log.commit(Event::ConversationCreated {
        id: "c1".into(),
        agent: "a".into(),
        resume_ref: Some("r1".into()),
        login: false,
    });
    assert_eq!(log.catalog.live_conversation_of("a").map(|c| c.id.as_str()), Some("c1"));
    let e = log
        .catalog
        .decide_transition("c1", Transition::Launched, "")
        .expect("launch");
    log.commit(e);
    let e = log
        .catalog
        .decide_transition("c1", Transition::Pause, "node restarted")
        .expect("pause");
    assert!(matches!(e, Event::ConversationPaused { planned: false, .. }));
    log.commit(e);
    let c = log.catalog.conversation("c1").expect("c1");
    assert_eq!(c.state, ConversationState::Paused);
    assert_eq!(c.resume_ref.as_deref(), Some("r1"), "pause keeps the resume reference");
    assert_eq!(c.pause_reason.as_deref(), Some("node restarted"));
    assert!(log.catalog.decide_transition("c1", Transition::Pause, "x").is_err());
    let e = log
        .catalog
        .decide_transition("c1", Transition::Continue, "")
        .expect("continue");
    log.commit(e);
    let e = log
        .catalog
        .decide_transition("c1", Transition::Launched, "")
        .expect("relaunch");
    assert_eq!(
        e,
        Event::ConversationLaunched {
            id: "c1".into(),
            resumed: true
        }
    );
    log.commit(e);
    assert!(matches!(
        log.catalog.decide_archive_agent("a"),
        Err(CatalogError::Conflict(_))
    ));
    let e = log
        .catalog
        .decide_transition("c1", Transition::Terminate, "done")
        .expect("terminate");
    log.commit(e);
    let err = log
        .catalog
        .decide_transition("c1", Transition::Continue, "")
        .expect_err("archived");
    assert!(
        err.to_string()
            .contains("cannot continue a conversation that is archived")
    );

    assert_eq!(Catalog::fold(&log.events), log.catalog);
}

#[test]
fn continue_refuses_a_second_live_conversation() {
    let mut log = Log::new();
    let e = log.catalog.decide_create_agent(create("a")).expect("create");
    log.commit(e);
    log.commit(Event::ConversationCreated {
        id: "old".into(),
        agent: "a".into(),
        resume_ref: None,
        login: false,
    });
    log.commit(Event::ConversationPaused {
        id: "old".into(),
        planned: true,
        reason: PLANNED_PAUSE.into(),
        exit: None,
    });
    log.commit(Event::ConversationCreated {
        id: "new".into(),
        agent: "a".into(),
        resume_ref: None,
        login: false,
    });
    let err = log
        .catalog
        .decide_transition("old", Transition::Continue, "")
        .expect_err("one live");
    assert!(err.to_string().contains("already has a live conversation new"));
}

#[test]
fn unknown_things_are_not_found() {
    let c = Catalog::default();
    assert!(matches!(c.agent("x"), Err(CatalogError::NotFound(_))));
    assert!(matches!(
        c.decide_transition("nope", Transition::Pause, ""),
        Err(CatalogError::NotFound(_))
    ));
}

mod approval_rule_tests {
    use super::*;

    const WS: &str = "/data/agents/a/workspace";

    fn commit(c: &mut Catalog, log: &mut Vec<StoredEvent>, e: Event) {
        let s = StoredEvent {
            seq: log.len() as u64 + 1,
            ts: log.len() as u64 * 10,
            event: e,
        };
        c.apply(&s);
        log.push(s);
    }

    #[test]
    fn learn_learn_again_forget_and_replay_equals_live() {
        let mut c = Catalog::default();
        let mut log = vec![];
        let e = c
            .decide_approval_rule(WS, "cargo  build", true, "local admin")
            .expect("valid")
            .expect("new");
        assert_eq!(
            e,
            Event::ApprovalRule {
                workspace: WS.into(),
                pattern: "cargo build".into(),
                learned: true,
                by: "local admin".into()
            },
            "stored in normal form"
        );
        commit(&mut c, &mut log, e);
        let e = c
            .decide_approval_rule(WS, "git push *", true, "human via supervision.answer")
            .expect("valid")
            .expect("new");
        commit(&mut c, &mut log, e);
        assert_eq!(c.approval_rules_of(WS), vec!["cargo build", "git push *"]);
        assert!(c.approval_rules_of("/elsewhere").is_empty(), "rules are per workspace");

        // Learning it again is a no-op.
        assert_eq!(c.decide_approval_rule(WS, "cargo build", true, "x"), Ok(None));

        let e = c
            .decide_approval_rule(WS, "cargo build", false, "local admin")
            .expect("known")
            .expect("event");
        commit(&mut c, &mut log, e);
        assert_eq!(c.approval_rules_of(WS), vec!["git push *"]);
        assert!(matches!(
            c.decide_approval_rule(WS, "cargo build", false, "x"),
            Err(CatalogError::NotFound(_))
        ));
        assert_eq!(Catalog::fold(&log), c, "replay equals live");

        let e = c
            .decide_approval_rule(WS, "git push *", false, "x")
            .expect("known")
            .expect("event");
        commit(&mut c, &mut log, e);
        assert!(c.approval_rules.is_empty(), "an emptied workspace is dropped");
        assert_eq!(Catalog::fold(&log), c);
    }

    #[test]
    fn bad_patterns_and_the_limit_are_refused() {
        let c = Catalog::default();
        let err = c
            .decide_approval_rule(WS, "cargo build && rm x", true, "x")
            .expect_err("compound");
        assert!(
            matches!(&err, CatalogError::Invalid(i) if i.field == "pattern"),
            "{err}"
        );

        let mut c = Catalog::default();
        let mut log = vec![];
        for i in 0..validate::MAX_LEARNED_RULES {
            let e = c
                .decide_approval_rule(WS, &format!("tool-{i} run"), true, "x")
                .expect("valid")
                .expect("new");
            commit(&mut c, &mut log, e);
        }
        let err = c.decide_approval_rule(WS, "one more", true, "x").expect_err("limit");
        assert!(
            matches!(&err, CatalogError::Conflict(m) if m.contains("limit of 200")),
            "{err}"
        );
        assert_eq!(
            c.decide_approval_rule(WS, "tool-7 run", true, "x"),
            Ok(None),
            "known is still fine"
        );
        assert!(
            c.decide_approval_rule("/other", "one more", true, "x").is_ok(),
            "per workspace"
        );
    }
}

mod mail_tests {
    use super::*;

    fn with_agents() -> Catalog {
        let mut c = Catalog::default();
        for (seq, (name, peers)) in [
            ("a", Some(serde_json::json!(["b"]))),
            ("b", Some(serde_json::json!("all"))),
            ("c", None),
        ]
        .into_iter()
        .enumerate()
        {
            c.apply(&StoredEvent {
                seq: seq as u64 + 1,
                ts: 0,
                event: Event::AgentCreated {
                    agent: AgentRecord {
                        name: name.into(),
                        harness: "fake".into(),
                        persona: None,
                        model: None,
                        grants: GrantsRecord {
                            tools: vec![],
                            peers,
                            recall: false,
                            egress: vec![],
                        },
                        rules: vec![],
                        resources: None,
                        workspace: None,
                    },
                },
            });
        }
        c
    }

    fn mail(from: &str, to: &str) -> console_api::MailSend {
        console_api::MailSend {
            from: from.into(),
            to: to.into(),
            body: "hi".into(),
            context: None,
        }
    }

    #[test]
    fn peers_decide_who_may_mail_whom_per_direction() {
        let c = with_agents();
        assert!(c.decide_mail_send(mail("a", "b"), "m1".into()).is_ok());
        assert!(matches!(
            c.decide_mail_send(mail("a", "c"), "m".into()),
            Err(CatalogError::Forbidden(_))
        ));
        assert!(c.decide_mail_send(mail("b", "c"), "m".into()).is_ok(), "all peers");
        assert!(
            matches!(
                c.decide_mail_send(mail("c", "a"), "m".into()),
                Err(CatalogError::Forbidden(_))
            ),
            "no peers"
        );
        assert!(matches!(
            c.decide_mail_send(mail("a", "zz"), "m".into()),
            Err(CatalogError::NotFound(_))
        ));
    }

    #[test]
    fn acks_only_move_forward() {
        let mut c = with_agents();
        let e = c.decide_mail_ack("a", u64::MAX, 10).expect("ok").expect("moves");
        c.apply(&StoredEvent {
            seq: 100,
            ts: 0,
            event: e,
        });
        assert_eq!(c.mail_cursors.get("a"), Some(&10), "clamped to the newest mail");
        assert_eq!(c.decide_mail_ack("a", 5, 20).expect("ok"), None);
        assert_eq!(c.decide_mail_ack("a", 10, 20).expect("ok"), None);
        assert!(c.decide_mail_ack("nobody", 1, 1).is_err());
        // An ack stored before acks were clamped folds to its own seq.
        c.apply(&StoredEvent {
            seq: 200,
            ts: 0,
            event: Event::MailAcked {
                agent: "a".into(),
                cursor: u64::MAX,
            },
        });
        assert_eq!(c.mail_cursors.get("a"), Some(&200));
    }

    #[test]
    fn mail_deliveries_only_move_forward() {
        let mut c = with_agents();
        let delivered = |upto: u64, full_body: bool| Event::MailDelivered {
            agent: "a".into(),
            conversation: "c".into(),
            upto,
            full_body,
        };
        for (seq, event) in [
            (10, delivered(5, false)),
            (11, delivered(3, true)),
            (12, delivered(7, true)),
            (13, delivered(6, false)),
            (14, delivered(u64::MAX, false)),
        ] {
            c.apply(&StoredEvent { seq, ts: 0, event });
        }
        let d = c.mail_delivered.get("a").copied().expect("folded");
        assert_eq!(
            (d.woken, d.full_body),
            (14, 7),
            "a nudge never counts as full body; clamped to its own seq"
        );
        assert!(!c.mail_delivered.contains_key("b"));
    }

    #[test]
    fn remote_mail_needs_its_address_named_and_hands_over_forward_only() {
        let c = with_agents();
        let send = |from: &str, to: &str| console_api::MailSend {
            from: from.into(),
            to: to.into(),
            body: "hi".into(),
            context: None,
        };
        // "all" is this node's agents; "b" names no remote agent.
        assert!(matches!(
            c.decide_mail_send(send("b", "x@n3"), "mail-1".into()),
            Err(CatalogError::Forbidden(_))
        ));
        assert!(c.decide_mail_send(send("a", "b@n3"), "mail-1".into()).is_err());
        assert!(c.decide_mail_send(send("nobody", "b@n3"), "mail-1".into()).is_err());

        let mut c = c;
        let fwd = |upto: u64, id: &str, refused: Option<&str>| Event::MailForwarded {
            node: "n3".into(),
            upto,
            id: id.into(),
            refused: refused.map(str::to_string),
        };
        for (seq, event) in [
            (10, fwd(5, "mail-5", None)),
            (11, fwd(3, "mail-3", None)),
            (12, fwd(8, "mail-8", Some("no agent"))),
            (13, fwd(u64::MAX, "mail-x", None)),
        ] {
            c.apply(&StoredEvent { seq, ts: 0, event });
        }
        assert_eq!(
            c.mail_forwarded.get("n3"),
            Some(&13),
            "never back; clamped to its own seq"
        );
        assert_eq!(
            c.mail_refused.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["mail-8"]
        );
        for i in 0..(MAX_MAIL_REFUSALS + 5) as u64 {
            c.apply(&StoredEvent {
                seq: 100 + i,
                ts: 0,
                event: fwd(100 + i, &format!("mail-r{i}"), Some("gone")),
            });
        }
        assert_eq!(c.mail_refused.len(), MAX_MAIL_REFUSALS, "refusals are bounded");
        assert_eq!(c.mail_refused.front().map(|(id, _)| id.as_str()), Some("mail-r5"));
    }
}

#[test]
fn workspace_paths_overlap_by_whole_components() {
    let cases = [
        ("/r", "/r", true),
        ("/r", "/r/sub", true),
        ("/r/sub/", "/r", true),
        ("/r/./sub", "/r/sub", true),
        ("/r/x/../sub", "/r/sub/deeper", true),
        ("/r", "/rx", false),
        ("/r/a", "/r/b", false),
        ("/a/b", "/a/bc", false),
    ];
    for (a, b, want) in cases {
        assert_eq!(paths_overlap(a, b), want, "{a} ~ {b}");
        assert_eq!(paths_overlap(b, a), want, "{b} ~ {a}");
    }
}

#[test]
fn a_lease_names_its_holder_until_archived() {
    let mut log = Log::new();
    for name in ["a", "b"] {
        let e = log.catalog.decide_create_agent(create(name)).expect("create");
        log.commit(e);
    }
    let created = |id: &str, agent: &str| Event::ConversationCreated {
        id: id.into(),
        agent: agent.into(),
        resume_ref: None,
        login: false,
    };
    log.commit(created("c1", "a"));
    let lease = log.catalog.decide_lease("c1", "/repo", "main", "abc").expect("free");
    log.commit(lease);
    assert_eq!(
        log.catalog
            .conversation("c1")
            .expect("c1")
            .workspace
            .as_ref()
            .map(|w| w.path.as_str()),
        Some("/repo")
    );
    log.commit(created("c2", "b"));
    for path in ["/repo", "/repo/vendor", "/"] {
        let err = log.catalog.decide_lease("c2", path, "main", "abc").expect_err(path);
        assert!(matches!(err, CatalogError::Conflict(_)), "{path}: {err}");
        assert!(err.to_string().contains("c1"), "names the holder: {err}");
    }
    log.catalog
        .decide_lease("c2", "/repository", "main", "abc")
        .expect("a sibling path is free");
    // Archived, the holder holds nothing.
    let e = log
        .catalog
        .decide_transition("c1", Transition::Terminate, "done")
        .expect("terminate");
    log.commit(e);
    log.catalog
        .decide_lease("c2", "/repo", "main", "abc")
        .expect("free once archived");
    // A paused conversation of an archived agent holds nothing either.
    log.commit(created("c3", "a"));
    let lease = log.catalog.decide_lease("c3", "/other", "main", "abc").expect("free");
    log.commit(lease);
    let e = log
        .catalog
        .decide_transition("c3", Transition::Pause, "paused")
        .expect("pause");
    log.commit(e);
    assert!(
        log.catalog.decide_lease("c2", "/other", "main", "abc").is_err(),
        "paused still holds"
    );
    let e = log.catalog.decide_archive_agent("a").expect("archive a");
    log.commit(e);
    log.catalog
        .decide_lease("c2", "/other", "main", "abc")
        .expect("free once its agent is archived");
}
