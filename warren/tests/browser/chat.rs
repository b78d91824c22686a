//! The chat view on a phone (393x851), end to end on a real node: the
//! agents as a list, a conversation started from it, a message and its reply
//! as bubbles, a held dialog as an inline card denied with one tap (the
//! denial reaches the CLI), and pause / continue. No terminal on the page.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_view_on_a_phone() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start();
    let mut api = node.client().await;
    call(&mut api, "agent.create", json!({ "name": "helper", "harness": "fake" })).await;

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&node, &[]);
    c.goto(&link).await.expect("pair");
    click(&c, "#nav-chats").await;
    wait_js(
        &c,
        "helper in the chat list, not started",
        Duration::from_secs(20),
        "return document.querySelector('#chats li[data-chat=\"helper\"]')?.dataset.state === 'none'",
    )
    .await;
    shot(&c, "chat-1-list", "phone: the chat list, one agent not started").await;
    click(&c, "#chats li[data-chat=\"helper\"] a").await;
    click(&c, "#chat-controls button.start").await;
    wait_js(
        &c,
        "the conversation started",
        Duration::from_secs(30),
        "return document.querySelector('#chat-controls button.pause')",
    )
    .await;
    let id = call(&mut api, "conversation.list", json!({ "agent": "helper" })).await["conversations"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    wait_idle(&mut api, &id).await;

    type_into(&c, "#chat-text", "hello there").await;
    click(&c, "#chat-send").await;
    wait_js(
        &c,
        "my bubble and the agent's reply",
        Duration::from_secs(20),
        "const mine = [...document.querySelectorAll('#chat .bubble.mine .text')].map((b) => b.textContent);
         const theirs = [...document.querySelectorAll('#chat .bubble.theirs .text')].map((b) => b.textContent);
         return mine.includes('hello there') && theirs.includes('echo: hello there')
            && !document.querySelector('#terminal')",
    )
    .await;
    shot(&c, "chat-2-reply", "phone: a message and the agent's reply as bubbles").await;

    // A dialog held for a human appears inline; Deny reaches the CLI.
    wait_idle(&mut api, &id).await;
    type_into(&c, "#chat-text", "/fake tool bash git push --force").await;
    click(&c, "#chat-send").await;
    wait_js(
        &c,
        "the held dialog as a card",
        Duration::from_secs(30),
        "return document.querySelector('#chat-holds .hold pre.subject')?.textContent === 'git push --force'",
    )
    .await;
    shot(
        &c,
        "chat-3-hold",
        "phone: a held command inline in the chat, Approve / Deny",
    )
    .await;
    click(&c, "#chat-holds .hold button.deny").await;
    wait_js(
        &c,
        "the denial in the chat and the card gone",
        Duration::from_secs(30),
        "return [...document.querySelectorAll('#chat .bubble .text')].some((b) => b.textContent.includes('Permission denied: git push --force'))
            && !document.querySelector('#chat-holds .hold')",
    )
    .await;
    let audit = call(&mut api, "supervision.audit", json!({ "agent": "helper" })).await;
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["decision"] == "deny" && e["trigger"] == "answer"),
        "the deny is audited as a human's: {audit}"
    );

    click(&c, "#chat-controls button.pause").await;
    wait_js(
        &c,
        "paused",
        Duration::from_secs(20),
        "return document.querySelector('#chat-controls button.continue')",
    )
    .await;
    assert_eq!(
        call(&mut api, "conversation.get", json!({ "conversation": id })).await["conversation"]["state"],
        "paused"
    );
    click(&c, "#chat-controls button.continue").await;
    wait_js(
        &c,
        "going again",
        Duration::from_secs(30),
        "return document.querySelector('#chat-controls button.pause')",
    )
    .await;
    shot(&c, "chat-4-continued", "phone: the same chat after pause and continue").await;
    c.close().await.expect("close");
}
