//! One member's view of the whole fleet: `{fleet: true}` lists of holds and
//! tasks, each item naming its member, one event subscription following every
//! member, and a hold of another member answered through the member the
//! caller talks to.

use super::*;

/// The holds `c` sees across the fleet that name `agent`.
async fn fleet_holds(c: &mut warren::client::Client, agent: &str) -> Vec<Value> {
    let v = c
        .call("supervision.holds", json!({ "fleet": true }))
        .await
        .expect("supervision.holds {fleet: true}");
    assert_eq!(v["unreachable"], json!([]), "{v}");
    v["holds"]
        .as_array()
        .expect("holds")
        .iter()
        .filter(|h| h["agent"] == agent)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_on_n2_is_listed_and_answered_from_n1() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));
    n2.call("agent.create", json!({ "name": "asker", "harness": "fake" }))
        .await
        .expect("asker on n2");
    let conv = n2.idle_conversation("asker").await.expect("asker idle");
    // One subscription on n1 follows every member's events.
    let token = lab.owner_token(0, &["node:observe", "node:supervise"]).expect("token");
    let mut events = n1.ws(&token).await.expect("events ws on n1");
    let sub = events
        .call(
            "events.subscribe",
            json!({ "fleet": true, "kinds": ["event.supervision.needs_you"] }),
        )
        .await
        .expect("events.subscribe {fleet: true}");
    assert_eq!(sub["unreachable"], json!([]), "{sub}");
    let sub = sub["subscription"].as_str().expect("subscription").to_string();
    for (bad, field) in [
        (json!({ "fleet": true, "agent": "asker" }), "agent"),
        (json!({ "fleet": true, "kinds": ["event.nope"] }), "kinds"),
    ] {
        let e = events.call("events.subscribe", bad.clone()).await.expect_err("refused");
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }

    // Supervision's master switch is off by default: every dialog is held.
    n2.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "/fake tool bash git push --force" }),
    )
    .await
    .expect("send");

    // The hold on n2 reaches n1's subscriber, naming n2.
    let deadline = Instant::now() + Duration::from_secs(20);
    let note = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let n = events
            .next_notification(left)
            .await
            .expect("read")
            .unwrap_or_else(|| panic!("no needs-you event from n2 within 20 s\n{}", n2.log()));
        if n.method == "event.supervision.needs_you" {
            break n;
        }
    };
    assert_eq!(
        (note.params["subscription"].as_str(), note.params["node"].as_str()),
        (Some(sub.as_str()), Some("n2")),
        "{}",
        note.params
    );

    // A client of n1 (the owner's observe-and-supervise token) sees it,
    // named as n2's; n1's own list does not have it.
    let mut c = n1.ws(&token).await.expect("ws n1");
    let deadline = Instant::now() + Duration::from_secs(20);
    let hold = loop {
        if let Some(h) = fleet_holds(&mut c, "asker").await.into_iter().next() {
            break h;
        }
        assert!(
            Instant::now() < deadline,
            "no hold of asker in n1's fleet view\n{}",
            n2.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(hold["node"], "n2", "{hold}");
    assert_eq!(hold["summary"], "git push --force", "{hold}");
    let here = c.call("supervision.holds", json!({})).await.expect("n1's own holds");
    assert_eq!(here["holds"], json!([]), "{here}");
    let out = tests_netlab::sh(&[
        &tests_netlab::warren_exe().display().to_string(),
        "supervision",
        "holds",
        "--fleet",
        "--data-dir",
        &n1.dir.display().to_string(),
    ])
    .expect("warren supervision holds --fleet");
    assert!(out.contains("\tasker@n2\t"), "{out}");

    // Denied through n1: it reaches the CLI on n2 as a deny, and the hold
    // leaves every view.
    let answered = c
        .call("supervision.answer", json!({ "hold": hold["id"], "decision": "deny" }))
        .await
        .expect("answer through n1");
    assert_eq!(answered["outcome"], "sent", "{answered}");
    wait_for("the deny on n2", Duration::from_secs(20), || async {
        let t = n2.call("transcript.read", json!({ "conversation": conv })).await.ok()?;
        t.to_string()
            .contains("Permission denied: git push --force")
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n2.log()));
    assert!(fleet_holds(&mut c, "asker").await.is_empty());

    // Tasks: the fleet-wide list answers from every member (none has a task).
    let tasks = c
        .call("task.list", json!({ "fleet": true }))
        .await
        .expect("task.list {fleet: true}");
    assert_eq!(
        (&tasks["tasks"], &tasks["unreachable"]),
        (&json!([]), &json!([])),
        "{tasks}"
    );
    // A task's own calls go to the member `node` names (an unknown one is named).
    let e = c
        .call("task.get", json!({ "task": "t-nowhere", "node": "n2" }))
        .await
        .expect_err("no such task on n2");
    assert!(e.to_string().contains("t-nowhere"), "{e}");
    let e = c
        .call("task.get", json!({ "task": "t-nowhere", "node": "n9" }))
        .await
        .expect_err("no member n9");
    assert!(e.to_string().contains("n9"), "{e}");
    let refused = tests_netlab::sh(&[
        &tests_netlab::warren_exe().display().to_string(),
        "task",
        "get",
        "t-nowhere@n9",
        "--data-dir",
        &n1.dir.display().to_string(),
    ])
    .expect_err("the CLI names the member");
    assert!(refused.to_string().contains("n9"), "{refused}");
    // A member's own account of itself, through n1 (the node page's source).
    let info = c
        .call("node.info", json!({ "node": "n3" }))
        .await
        .expect("n3's node.info through n1");
    assert_eq!(
        (info["name"].as_str(), info["runtime"].as_str()),
        (Some("n3"), Some("local")),
        "{info}"
    );
    assert!(info["capacity"]["cpus"].as_u64().is_some_and(|n| n >= 1), "{info}");
    let out = tests_netlab::sh(&[
        &tests_netlab::warren_exe().display().to_string(),
        "node",
        "info",
        "n2",
        "--data-dir",
        &n1.dir.display().to_string(),
    ])
    .expect("warren node info n2");
    assert!(
        out.lines().any(|l| l.starts_with("name") && l.ends_with(" n2")),
        "{out}"
    );

    // Unread mail counts: one call for every member's agents.
    n2.call("agent.create", json!({ "name": "reader", "harness": "fake" }))
        .await
        .expect("reader on n2");
    n2.call(
        "agent.create",
        json!({ "name": "writer", "harness": "fake", "grants": { "peers": ["reader"] } }),
    )
    .await
    .expect("writer on n2");
    n2.call(
        "mailbox.send",
        json!({ "from": "writer", "to": "reader", "body": "hello" }),
    )
    .await
    .expect("mail on n2");
    let unread = c
        .call("mailbox.unread", json!({ "fleet": true }))
        .await
        .expect("mailbox.unread {fleet: true}");
    let on_n2: Vec<&Value> = unread["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter(|a| a["node"] == "n2")
        .collect();
    assert!(
        on_n2.iter().any(|a| a["agent"] == "reader" && a["unread"] == 1)
            && on_n2.iter().any(|a| a["agent"] == "asker" && a["unread"] == 0),
        "{unread}"
    );
    assert_eq!(unread["unreachable"], json!([]), "{unread}");

    // Spend: every member's days, each naming its node, the dollars summed.
    let spend = c
        .call("spend.history", json!({ "fleet": true, "since_day": "2020-01-01" }))
        .await
        .expect("spend.history {fleet: true}");
    assert!(spend["usd"].is_number() && spend["days"].is_array(), "{spend}");
    assert_eq!(spend["unreachable"], json!([]), "{spend}");
    let e = c
        .call("task.list", json!({ "fleet": true, "state": "sleeping" }))
        .await
        .expect_err("a bad state");
    assert!(e.to_string().contains("state"), "{e}");
}
