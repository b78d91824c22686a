//! Web Push in the console on a phone (393x851): "Notify me" registers the
//! console's service worker; a hold on the node is POSTed to the phone's
//! push subscription (a fake push service: no real one is reachable
//! offline), decrypted as the browser's push service would hand it over, and
//! delivered to the service worker through Chromium's DevTools
//! (`ServiceWorker.deliverPushMessage`); the worker shows it with Approve
//! and Deny, and its Approve answers the hold with the push's answer token.

use fake_model::push::FakePush;

use super::*;

#[path = "../push/oracle.rs"]
mod oracle;

/// A DevTools command sent through chromedriver (`goog/cdp/execute`).
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

async fn cdp(c: &fantoccini::Client, cmd: &'static str, params: Value) -> Result<Value, String> {
    c.issue_cmd(Cdp { cmd, params }).await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_reaches_the_service_worker_and_its_approve_answers_the_hold() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start_with_config("[push]\nallow_private = true\n");
    let mut api = node.client().await;
    let id = agent_with_conversation(&mut api, "pusher").await;
    wait_idle(&mut api, &id).await;

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&node, &[]);
    let origin = link
        .split("/#")
        .next()
        .expect("origin")
        .trim_end_matches('/')
        .to_string();
    cdp(
        &c,
        "Browser.grantPermissions",
        json!({ "permissions": ["notifications"], "origin": origin }),
    )
    .await
    .expect("notifications allowed");
    c.goto(&link).await.expect("pair");
    click(&c, "#notify-me").await;
    let said = wait_js(
        &c,
        "what Notify me did",
        Duration::from_secs(20),
        "return document.querySelector('#push-state')?.title",
    )
    .await;
    wait_js(
        &c,
        "the service worker active",
        Duration::from_secs(20),
        "return navigator.serviceWorker.getRegistration('/assets/').then((r) => !!(r && r.active))",
    )
    .await;
    shot(
        &c,
        "push-1-notify-me",
        &format!("phone: Notify me ({})", said.as_str().unwrap_or("?")),
    )
    .await;

    // The phone's subscription, with keys the test holds (the browser's own
    // would need a real push service).
    let token = c
        .execute("return localStorage.getItem('warren.token')", vec![])
        .await
        .expect("token")
        .as_str()
        .expect("a stored token")
        .to_string();
    let mut service = FakePush::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("fake push service");
    let keys = oracle::oracle("keys", None);
    let mut phone = client_with(&node, &token).await;
    call(
        &mut phone,
        "push.subscribe",
        oracle::subscription(&service.url("/phone"), &keys),
    )
    .await;

    send(&mut api, &id, "/fake tool bash git push --force").await;
    let pushed = service
        .next_to("/phone", Duration::from_secs(20))
        .await
        .expect("the hold pushed");
    let payload = oracle::open(&pushed, &keys)["payload"].clone();
    let hold = payload["hold"]["id"].as_str().expect("hold id").to_string();
    assert!(payload["answer_token"].is_string(), "{payload}");

    // Chromium hands the decrypted message to the worker, as its push
    // service would. DevTools answers every registration id alike and may
    // drop a delivery made just after `ServiceWorker.enable`: the push is
    // offered again (to the first ids of this fresh profile) until the
    // worker shows it. Its tag is the hold's, so offers never stack.
    cdp(&c, "ServiceWorker.enable", json!({}))
        .await
        .expect("ServiceWorker.enable");
    let shown = eventually("the notification shown", Duration::from_secs(30), async || {
        for reg in 0..4 {
            let params = json!({ "origin": origin, "registrationId": reg.to_string(), "data": payload.to_string() });
            cdp(&c, "ServiceWorker.deliverPushMessage", params)
                .await
                .expect("ServiceWorker.deliverPushMessage");
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
        let v = c
            .execute(
                "return navigator.serviceWorker.getRegistration('/assets/')
                   .then((r) => r.getNotifications())
                   .then((ns) => ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => a.action) })))",
                vec![],
            )
            .await
            .ok()?;
        v.as_array().is_some_and(|a| !a.is_empty()).then_some(v)
    })
    .await;
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "one notification: {shown}");
    assert_eq!(shown[0]["tag"], hold.as_str(), "{shown}");
    assert_eq!(shown[0]["actions"], json!(["approve", "deny"]), "{shown}");
    assert!(
        shown[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("git push --force")),
        "{shown}"
    );
    assert!(
        shown[0]["body"].as_str().is_some_and(|b| b.contains("pusher")),
        "{shown}"
    );

    // Its Approve (the worker's own path, asked by the page).
    let answered = c
        .execute(
            "return import('/assets/push.js').then((m) => m.act(arguments[0], 'approve'))",
            vec![json!(hold)],
        )
        .await
        .expect("act");
    assert_eq!(answered["answered"]["decision"], "approve", "{answered}");
    let holds = call(&mut api, "supervision.holds", json!({})).await;
    assert_eq!(holds["holds"], json!([]), "the hold was answered: {holds}");
    let audit = call(&mut api, "supervision.audit", json!({ "agent": "pusher" })).await;
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["trigger"] == "answer" && e["decision"] == "approve"),
        "approved by a human: {audit}"
    );
    let left = wait_js(
        &c,
        "the notification closed",
        Duration::from_secs(10),
        "return navigator.serviceWorker.getRegistration('/assets/')
           .then((r) => r.getNotifications()).then((ns) => ns.length === 0 ? 'closed' : null)",
    )
    .await;
    assert_eq!(left, "closed");
    shot(&c, "push-2-answered", "phone: the hold approved from its notification").await;
}
