//! Mail delivered into a conversation as seed 000 says, on a real node with
//! the fake CLI: an unsupervised agent gets each message's full body; a
//! supervised one its `mail_mode`, the nudge only when it has the `mail`
//! tool to read its inbox; a full-body delivery the CLI took marks the mail
//! delivered (`mailbox.inbox`'s `delivered`), so it is no outstanding work
//! for stall nudges; and a node killed with SIGKILL right after a delivery
//! does not type that mail again once restarted.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const NUDGE: &str = "Check your warren mail and act on it.";

/// An agent `name` on the fake CLI with these tool grants.
async fn agent_with_tools(c: &mut warren::client::Client, name: &str, tools: &[&str]) {
    call(
        c,
        "agent.create",
        json!({ "name": name, "harness": "fake", "grants": { "tools": tools } }),
    )
    .await;
}

/// The mail sender `boss`, allowed to mail everyone.
async fn boss(c: &mut warren::client::Client) {
    call(
        c,
        "agent.create",
        json!({ "name": "boss", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
}

/// Mails `body` from `boss` to `to`; returns the message's seq.
async fn mail(c: &mut warren::client::Client, to: &str, body: &str) -> u64 {
    let sent = call(c, "mailbox.send", json!({ "from": "boss", "to": to, "body": body })).await;
    sent["seq"].as_u64().expect("seq")
}

/// `supervision set AGENT ARGS...` through the CLI (local admin).
fn set(node: &TestNode, agent: &str, args: &[&str]) {
    let mut full = vec!["supervision", "set", agent];
    full.extend_from_slice(args);
    let (code, out, err) = warren(&full, &node.path());
    assert_eq!(code, 0, "warren {full:?}: {err}{out}");
}

/// The transcript lines the node typed into conversation `id` as a full
/// mail body carrying `body` (the CLI's echo of it is not counted).
async fn full_bodies(c: &mut warren::client::Client, id: &str, body: &str) -> Vec<Value> {
    transcript(c, id)
        .await
        .into_iter()
        .filter(|e| {
            e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[WARREN MAIL id=") && t.contains(body))
        })
        .collect()
}

/// Waits until the node has typed `body` into `id` as a full mail body.
async fn wait_full_body(node: &TestNode, id: &str, body: &str) -> Value {
    wait_until(
        &format!("{body:?} is typed in full into {id}"),
        Duration::from_secs(20),
        || {
            let target = node.target();
            let (id, body) = (id.to_string(), body.to_string());
            async move {
                let mut c = warren::client::Client::connect(&target).await.ok()?;
                full_bodies(&mut c, &id, &body).await.into_iter().next()
            }
        },
    )
    .await
}

/// Waits until `agent`'s inbox says its mail was delivered in full up to `seq`.
async fn wait_delivered(node: &TestNode, agent: &str, seq: u64) -> Value {
    wait_until(
        &format!("{agent}'s mail is marked delivered up to {seq}"),
        Duration::from_secs(20),
        || {
            let target = node.target();
            let agent = agent.to_string();
            async move {
                let mut c = warren::client::Client::connect(&target).await.ok()?;
                let inbox = c.call("mailbox.inbox", json!({ "agent": agent })).await.ok()?;
                (inbox["delivered"].as_u64() == Some(seq)).then_some(inbox)
            }
        },
    )
    .await
}

/// `agent`'s audit rows with this trigger.
async fn rows_of(c: &mut warren::client::Client, agent: &str, trigger: &str) -> Vec<Value> {
    let a = call(c, "supervision.audit", json!({ "agent": agent })).await;
    a["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|r| r["trigger"] == trigger)
        .cloned()
        .collect()
}

fn count_text(events: &[Value], text: &str) -> usize {
    events.iter().filter(|e| e["text"] == text).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupervised_agent_gets_the_full_body_with_or_without_the_mail_tool() {
    // The master switch is off (the default): no agent is supervised, and a
    // stored mail_mode of nudge changes nothing.
    let node = TestNode::start_with_config("[supervision]\nmail_mode = \"nudge\"\n");
    let mut c = node.client().await;
    boss(&mut c).await;
    agent_with_tools(&mut c, "plain", &[]).await;
    agent_with_tools(&mut c, "tooled", &["mail"]).await;
    // An agent that opted in is still unsupervised while the master is off.
    set(&node, "tooled", &["--enable", "--mail-mode", "nudge"]);
    let plain = conversation_id(&mut c, "plain").await;
    let tooled = conversation_id(&mut c, "tooled").await;

    let p = mail(&mut c, "plain", "please rebase").await;
    let t = mail(&mut c, "tooled", "please review").await;
    let line = wait_full_body(&node, &plain, "please rebase").await;
    let text = line["text"].as_str().expect("text");
    assert!(text.ends_with("from=boss] please rebase [END WARREN MAIL]"), "{text}");
    assert_eq!(line["speaker"], "system");
    wait_full_body(&node, &tooled, "please review").await;
    wait_delivered(&node, "plain", p).await;
    wait_delivered(&node, "tooled", t).await;
    // Once each, and never a nudge instead.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (id, body) in [(&plain, "please rebase"), (&tooled, "please review")] {
        assert_eq!(full_bodies(&mut c, id, body).await.len(), 1, "{body} typed once");
        assert_eq!(count_text(&transcript(&mut c, id).await, NUDGE), 0, "no nudge in {id}");
    }
    // The mail stays unread until the agent acks it.
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "plain" })).await;
    assert_eq!(inbox["messages"].as_array().expect("list").len(), 1);
    assert_eq!(inbox["acked"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_agent_gets_the_nudge_only_when_it_can_read_its_inbox() {
    let node = TestNode::start_with_config("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    boss(&mut c).await;
    agent_with_tools(&mut c, "tooled", &["mail"]).await;
    agent_with_tools(&mut c, "plain", &[]).await;
    set(&node, "tooled", &["--enable"]);
    set(&node, "plain", &["--enable"]);
    let tooled = conversation_id(&mut c, "tooled").await;
    let plain = conversation_id(&mut c, "plain").await;

    mail(&mut c, "tooled", "secret plan").await;
    let p = mail(&mut c, "plain", "open plan").await;
    wait_event(&mut c, &tooled, "system", NUDGE).await;
    // Without the mail tool the nudge would point at nothing: the body comes instead.
    wait_full_body(&node, &plain, "open plan").await;
    wait_delivered(&node, "plain", p).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = transcript(&mut c, &tooled).await;
    assert_eq!(count_text(&events, NUDGE), 1, "one nudge for the batch");
    assert!(
        !events
            .iter()
            .any(|e| e["text"].as_str().is_some_and(|t| t.contains("secret plan"))),
        "the nudged agent reads the body from its inbox, it is not typed"
    );
    assert_eq!(count_text(&transcript(&mut c, &plain).await, NUDGE), 0);
    let tooled_inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "tooled" })).await;
    assert_eq!(tooled_inbox["delivered"], 0, "a nudge does not deliver the mail");
    for (agent, decision) in [("tooled", "nudge"), ("plain", "full_body")] {
        let rows = rows_of(&mut c, agent, "mail").await;
        assert_eq!(rows.len(), 1, "{agent}: {rows:#?}");
        assert_eq!(
            (rows[0]["decision"].as_str(), rows[0]["outcome"].as_str()),
            (Some(decision), Some("sent")),
            "{agent}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_typed_in_full_is_no_outstanding_work_for_stall_nudges() {
    let node = TestNode::start_with_config(
        "[supervision]\nenabled = true\nnudge_retries = 2\nstall_secs = 1\nnudge_interval_secs = 1\n",
    );
    let mut c = node.client().await;
    boss(&mut c).await;
    // `full` gets its mail typed in full; `nudged` is only nudged about it,
    // so its unread mail stays outstanding work.
    agent_with_tools(&mut c, "full", &["mail"]).await;
    agent_with_tools(&mut c, "nudged", &["mail"]).await;
    set(&node, "full", &["--enable", "--mail-mode", "full_body"]);
    set(&node, "nudged", &["--enable"]);
    let full = conversation_id(&mut c, "full").await;
    conversation_id(&mut c, "nudged").await;

    let seq = mail(&mut c, "full", "ship it").await;
    mail(&mut c, "nudged", "ship that").await;
    wait_full_body(&node, &full, "ship it").await;
    let inbox = wait_delivered(&node, "full", seq).await;
    assert_eq!(inbox["acked"], 0, "delivered, not read: the inbox still lists it");
    assert_eq!(inbox["messages"].as_array().expect("list").len(), 1);
    // The nudged agent's unread mail keeps it stalled: the stall watch nudges it.
    wait_until("the nudged agent is stall-nudged", Duration::from_secs(20), || {
        let target = node.target();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            (!rows_of(&mut c, "nudged", "stall").await.is_empty()).then_some(())
        }
    })
    .await;
    // Well past the 1 s threshold, the agent whose mail was delivered is not.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let stalls = rows_of(&mut c, "full", "stall").await;
    assert!(stalls.is_empty(), "delivered mail is no outstanding work: {stalls:#?}");
    assert_eq!(full_bodies(&mut c, &full, "ship it").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_is_typed_exactly_once_across_kill_9() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    boss(&mut c).await;
    agent_with_tools(&mut c, "coder", &[]).await;
    let id = conversation_id(&mut c, "coder").await;
    let seq = mail(&mut c, "coder", "before the crash").await;
    wait_full_body(&node, &id, "before the crash").await;
    wait_delivered(&node, "coder", seq).await;
    // SIGKILL right after the delivery.
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "coder" })).await;
    assert_eq!(inbox["delivered"], seq, "the delivery mark survived kill -9");
    assert_eq!(
        inbox["messages"].as_array().expect("list").len(),
        1,
        "still unread: only typed"
    );
    let resumed = call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    assert_eq!(resumed["conversation"]["state"], "active");
    wait_idle(&mut c, &id).await;
    // Mail sent after the restart is delivered (the delivery tick runs)...
    let after = mail(&mut c, "coder", "after the crash").await;
    wait_full_body(&node, &id, "after the crash").await;
    wait_delivered(&node, "coder", after).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // ...and the mail delivered before the crash was not typed a second time.
    let before = full_bodies(&mut c, &id, "before the crash").await;
    assert_eq!(before.len(), 1, "typed exactly once: {before:#?}");
    let again = full_bodies(&mut c, &id, "after the crash").await;
    assert_eq!(again.len(), 1, "{again:#?}");
    assert!(
        !again[0]["text"].as_str().expect("text").contains("before the crash"),
        "the new delivery carries only the new mail"
    );
}
