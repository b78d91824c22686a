//! Web Push across the fleet: a phone subscribed on n1 is pushed a hold of
//! an agent on n2 (n1 follows every member's needs-yous with the phone's
//! token): one outstanding when it subscribed, then one raised while it is
//! subscribed. The push's answer token answers its hold through n1 and does
//! nothing else.

use fake_model::push::FakePush;

use super::*;

#[path = "../../../warren/tests/push/oracle.rs"]
mod oracle;

/// A new agent `name` on `node` runs `bash COMMAND`, which is held.
async fn ask(node: &tests_netlab::LabNode, name: &str, command: &str) {
    node.call("agent.create", json!({ "name": name, "harness": "fake" }))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let conv = node.idle_conversation(name).await.expect("idle");
    node.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": format!("/fake tool bash {command}") }),
    )
    .await
    .expect("send");
}

/// The next push to the phone, within 20 s.
async fn next_push(service: &mut FakePush, n1: &tests_netlab::LabNode) -> fake_model::push::Pushed {
    service
        .next_to("/p/phone", Duration::from_secs(20))
        .await
        .unwrap_or_else(|| panic!("no push from n1 within 20 s\n{}", n1.log()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_on_n2_is_pushed_by_n1_and_answered_with_its_answer_token() {
    let lab = three_node_fleet_with("[push]\nallow_private = true\n").await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));
    // The push service stand-in listens on the host's bridge address.
    let mut service = FakePush::start(format!("{}:0", lab.host_ip()).parse().expect("addr"))
        .await
        .expect("fake push service");
    let keys = oracle::oracle("keys", None);
    let token = lab.owner_token(0, &["node:observe", "node:supervise"]).expect("token");
    ask(n2, "asker", "git push --force").await;
    // The hold is raised before the phone subscribes: it is outstanding, so
    // it is pushed when the subscription opens.
    wait_for("the hold on n2", Duration::from_secs(20), || async {
        let h = n2.call("supervision.holds", json!({})).await.ok()?;
        (!h["holds"].as_array()?.is_empty()).then_some(())
    })
    .await
    .expect("a hold on n2");
    let mut phone = n1.ws(&token).await.expect("phone on n1");
    phone
        .call("push.subscribe", oracle::subscription(&service.url("/p/phone"), &keys))
        .await
        .expect("push.subscribe on n1");
    let pushed = next_push(&mut service, n1).await;
    let payload = &oracle::open(&pushed, &keys)["payload"];
    assert_eq!(
        (payload["kind"].as_str(), payload["node"].as_str()),
        (Some("hold"), Some("n2")),
        "{payload}"
    );
    assert_eq!(payload["agent"], "asker");
    let hold = payload["hold"]["id"].as_str().expect("hold id").to_string();
    let answer = payload["answer_token"].as_str().expect("an answer token").to_string();

    let mut card = n1.ws(&answer).await.expect("the notification's action on n1");
    let e = card
        .call("supervision.holds", json!({ "fleet": true }))
        .await
        .expect_err("an answer token lists nothing");
    assert!(e.to_string().contains("-32003"), "{e}");
    card.call("supervision.answer", json!({ "hold": hold, "decision": "deny" }))
        .await
        .expect("the hold on n2 answered through n1");
    let left = n2.call("supervision.holds", json!({})).await.expect("holds on n2");
    assert_eq!(left["holds"], json!([]), "answered on n2: {left}");
    let audit = n2
        .call("supervision.audit", json!({ "agent": "asker" }))
        .await
        .expect("audit");
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["trigger"] == "answer" && e["decision"] == "deny"),
        "the deny is audited on n2: {audit}"
    );

    // A hold raised now, while the subscription is open, is pushed as it
    // comes; the one answered is not pushed again.
    ask(n2, "second", "rm -rf /srv").await;
    let payload = &oracle::open(&next_push(&mut service, n1).await, &keys)["payload"];
    assert_eq!(
        (payload["kind"].as_str(), payload["agent"].as_str()),
        (Some("hold"), Some("second")),
        "{payload}"
    );
    assert_eq!(payload["hold"]["summary"], "rm -rf /srv", "{payload}");
}
