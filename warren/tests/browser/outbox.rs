//! An agent's mail to other nodes on its page. On a real node the page asks
//! the real `mailbox.outbox` and says none was sent; then the console's own
//! `agentView` (the module the node serves) draws delivered, pending and
//! refused messages from answers shaped as the API gives them, handed to it
//! by a stand-in connection in the page (a fleet cannot run beside a browser
//! here; the fleet's delivery itself is `tests-netlab`'s `fleet/mail.rs`).

use super::*;

const DRAW: &str = r#"
const done = arguments[arguments.length - 1];
(async () => {
  const { agentView } = await import('/assets/views.js');
  const now = Date.now();
  const answers = {
    'mailbox.outbox': { messages: [
      { message_id: 'mail-3', seq: 30, ts: now - 2000, to: 'cleo@n3', state: 'pending' },
      { message_id: 'mail-2', seq: 20, ts: now - 60000, to: 'zed@n3', state: 'refused', reason: 'no agent "zed" on node n3' },
      { message_id: 'mail-1', seq: 10, ts: now - 120000, to: 'cleo@n3', state: 'delivered' },
    ], next_before: 10 },
    'mailbox.inbox': { messages: [], cursor: 0, acked: 0, delivered: 0 },
    'supervision.audit': { entries: [] },
    'egress.audit': { entries: [], egress: [] },
  };
  const ctx = {
    readOnly: false, live: true,
    rpc: { call: async (method) => {
      if (method in answers) return structuredClone(answers[method]);
      throw { code: -32601, message: `${method} is not part of this drawing` };
    } },
    onUp: () => () => {}, onEvents: () => () => {},
  };
  document.getElementById('view').style.display = 'none';
  const main = document.createElement('main');
  main.id = 'drawn';
  document.body.append(main);
  agentView(main, ctx, 'ann');
  // Only the mail sections are drawn (the definition above them is asked of
  // no one here).
  main.querySelector('#agent').hidden = true;
  await new Promise((resolve) => {
    const seen = () => main.querySelectorAll('#outbox li').length === 3;
    if (seen()) return resolve();
    new MutationObserver((_, o) => { if (seen()) { o.disconnect(); resolve(); } }).observe(main, { childList: true, subtree: true });
  });
  done({
    rows: [...main.querySelectorAll('#outbox li')].map((li) => [li.className, li.textContent]),
    count: main.querySelector('#outbox-count').textContent,
  });
})().catch((e) => done({ error: String(e) }));
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_page_shows_its_mail_to_other_nodes() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start();
    let base = console_base(&node);
    let mut api = node.client().await;
    call(
        &mut api,
        "agent.create",
        json!({ "name": "ann", "harness": "fake", "grants": { "peers": ["cleo@n3"], "tools": ["mail"] } }),
    )
    .await;
    let (c, _profile) = paired_console(&driver, &node).await;
    c.goto(&format!("{base}#/agent/ann")).await.expect("ann's page");
    wait_js(
        &c,
        "ann's outbox, asked of the node",
        Duration::from_secs(20),
        "const li = document.querySelector('#outbox li'); return li && li.textContent === 'None sent to other nodes.'",
    )
    .await;

    let drawn = c.execute_async(DRAW, vec![]).await.expect("draw");
    assert!(drawn.get("error").is_none(), "{drawn}");
    let rows = drawn["rows"].as_array().expect("rows");
    let classes: Vec<&str> = rows.iter().map(|r| r[0].as_str().unwrap_or_default()).collect();
    assert_eq!(
        classes,
        ["outbox-pending", "outbox-refused", "outbox-delivered"],
        "{drawn}"
    );
    let texts: Vec<&str> = rows.iter().map(|r| r[1].as_str().unwrap_or_default()).collect();
    assert!(
        texts[0].contains("to cleo@n3") && texts[0].contains("pending"),
        "{texts:?}"
    );
    assert!(
        texts[1].contains("zed@n3") && texts[1].contains("refused: no agent \"zed\" on node n3"),
        "{texts:?}"
    );
    assert!(texts[2].contains("delivered") && !texts[2].contains(':'), "{texts:?}");
    assert_eq!(drawn["count"], "(1 pending)", "{drawn}");
    shot(
        &c,
        "agent-outbox",
        "desktop: an agent's mail to other nodes (drawn from API-shaped answers)",
    )
    .await;
}
