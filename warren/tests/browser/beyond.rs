//! The console beyond one page load: a reconnect that resumes from its
//! cursor, a phone that reaches a second node, the attach form placing a
//! monitor on another node, and the console over TLS.

use super::*;

/// The node stops under the page and comes back on the same port: the page
/// shows it is reconnecting, signs in again by itself, and resumes the
/// transcript from its cursor: every event once, in order, nothing missed,
/// the ones written while it was away included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reconnects_and_resumes_from_its_cursor() {
    use warren::bench::NodeProcess;
    let (_one, driver) = start_driver().await;
    let dir = tempfile::tempdir().expect("data dir");
    let listen = format!("127.0.0.1:{}", free_port());
    let exe = Path::new(EXE);
    let mut proc = Some(NodeProcess::start_listening(exe, dir.path(), "local", &listen).expect("node"));
    let target = proc.as_ref().expect("node").target.clone();
    let mut api = warren::client::Client::connect(&target).await.expect("connect");
    let conv = agent_with_conversation(&mut api, "resumer").await;
    send(&mut api, &conv, "before the drop").await;
    wait_event(&mut api, &conv, "agent", "echo: before the drop").await;

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 1280, 800, profile.path()).await;
    let (code, out, err) = warren(&["console", "pair", "--json"], dir.path());
    assert_eq!(code, 0, "{err}");
    let p: Value = serde_json::from_str(&out).expect("json");
    c.goto(&format!(
        "{}#pair={}",
        p["url"].as_str().expect("url"),
        p["code"].as_str().expect("code")
    ))
    .await
    .expect("pair");
    wait_js(
        &c,
        "online",
        Duration::from_secs(20),
        "return document.body.dataset.conn === 'online'",
    )
    .await;
    c.goto(&format!("{}#/conv/{conv}", p["url"].as_str().expect("url")))
        .await
        .expect("open the conversation");
    let has = |text: &str| {
        format!("return [...document.querySelectorAll('#transcript li .text')].some(e => e.textContent === {text:?})")
    };
    wait_js(
        &c,
        "the transcript so far",
        Duration::from_secs(20),
        &has("echo: before the drop"),
    )
    .await;

    // The node goes away (a clean stop pauses the conversation) ...
    drop(proc.take());
    wait_js(
        &c,
        "the page saying it is reconnecting",
        Duration::from_secs(20),
        "return document.querySelector('#conn-state').textContent === 'reconnecting'",
    )
    .await;
    shot(
        &c,
        "reconnecting",
        "desktop: the page while the node is down, saying it is reconnecting",
    )
    .await;
    // ... and comes back on the same address; the conversation goes on.
    proc = Some(NodeProcess::start_listening(exe, dir.path(), "local", &listen).expect("node restarts"));
    let mut api = warren::client::Client::connect(&proc.as_ref().expect("node").target)
        .await
        .expect("connect");
    call(&mut api, "conversation.continue", json!({ "conversation": conv })).await;
    wait_idle(&mut api, &conv).await;
    send(&mut api, &conv, "after the drop").await;
    wait_js(
        &c,
        "online again",
        Duration::from_secs(30),
        "return document.body.dataset.conn === 'online'",
    )
    .await;
    wait_js(
        &c,
        "the events since the drop",
        Duration::from_secs(30),
        &has("echo: after the drop"),
    )
    .await;

    // Every stored event once, in order: the page's list is the store's.
    let stored: Vec<u64> = transcript(&mut api, &conv)
        .await
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    let shown = wait_js(
        &c,
        "the page holding every stored event",
        Duration::from_secs(20),
        &format!(
            "const seqs = [...document.querySelectorAll('#transcript li')].map(e => Number(e.dataset.seq));
             return seqs.length >= {} ? seqs : null",
            stored.len()
        ),
    )
    .await;
    let shown: Vec<u64> = shown
        .as_array()
        .expect("seqs")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(shown, stored, "the page's transcript is the store's, once each");
    shot(
        &c,
        "reconnected",
        "desktop: the page after the node came back, the transcript resumed from its cursor",
    )
    .await;
    c.close().await.expect("close");
}

/// Two real nodes in one fleet (node-a holds the owner key, node-b joined
/// by invite), both healthy in node-a's view; the key's directory.
async fn two_node_fleet() -> (tempfile::TempDir, TestNode, TestNode) {
    let keys = tempfile::tempdir().expect("key dir");
    let owner = keys.path().join("owner.key");
    let (code, _, err) = warren(
        &["fleet", "init", "--key-file", &owner.display().to_string()],
        keys.path(),
    );
    assert_eq!(code, 0, "fleet init: {err}");
    let fleet = "[fleet]\nlisten = \"/ip4/127.0.0.1/tcp/0\"\nheartbeat_ms = 300\nunhealthy_after_ms = 2500\n";
    let a = TestNode::start_with_config(&format!(
        "name = \"node-a\"\n{fleet}owner_key = {:?}\n",
        owner.display().to_string()
    ));
    // node-b names a Codex program that is not there: its node page says so.
    let b = TestNode::start_with_config(&format!(
        "name = \"node-b\"\n{fleet}[harnesses.codex]\nprogram = \"/nonexistent/codex\"\n"
    ));
    let (code, invite, err) = warren(&["fleet", "invite"], &a.path());
    assert_eq!(code, 0, "fleet invite: {err}");
    let (code, _, err) = warren(&["fleet", "join", invite.trim()], &b.path());
    assert_eq!(code, 0, "fleet join: {err}");
    let mut api = a.client().await;
    eventually(
        "both nodes healthy in node-a's view",
        Duration::from_secs(30),
        async || {
            let v = api.call("fleet.nodes", json!({})).await.ok()?;
            let healthy = v["nodes"].as_array()?.iter().filter(|n| n["healthy"] == true).count();
            (healthy == 2).then_some(())
        },
    )
    .await;
    (keys, a, b)
}

/// Two real nodes in one fleet, and a monitor whose breaker tripped: the
/// phone's fleet view shows both nodes and the tripped breaker, and re-arms
/// it from the monitors view with one tap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_sees_a_second_node_and_rearms_a_tripped_breaker() {
    let (_one, driver) = start_driver().await;
    let (_keys, a, b) = two_node_fleet().await;
    let mut api = a.client().await;

    // A ping-pong: the coder answers every piece of advice with the keyword.
    call(
        &mut api,
        "agent.create",
        json!({ "name": "coder", "harness": "fake", "rules": [
            { "match": "Advice from monitor", "actions": [{ "say": "still a segfault" }] },
            { "match": "^crash", "actions": [{ "say": "segfault" }] }
        ] }),
    )
    .await;
    call(
        &mut api,
        "agent.create",
        json!({ "name": "mon", "harness": "fake", "rules": [
            { "match": "warren-read (c-[0-9a-f]+)", "actions": [{ "shell": "warren-advise {{1}} 'try again'" }] }
        ] }),
    )
    .await;
    let attachment = call(
        &mut api,
        "monitor.attach",
        json!({ "monitor": "mon", "target": { "agent": "coder" },
                "trigger": { "keywords": [{ "text": "segfault" }] }, "breaker": { "max_cycles": 1 } }),
    )
    .await["attachment"]["id"]
        .as_str()
        .expect("attachment")
        .to_string();
    let target = conversation_id(&mut api, "coder").await;
    send(&mut api, &target, "crash").await;
    let state = async |api: &mut warren::client::Client, want: &str| {
        let l = api.call("monitor.list", json!({})).await.ok()?;
        let a = l["attachments"]
            .as_array()?
            .iter()
            .find(|x| x["id"] == attachment.as_str())?
            .clone();
        (a["state"] == want).then_some(a)
    };
    eventually("the breaker trips", Duration::from_secs(60), async || {
        state(&mut api, "tripped").await
    })
    .await;

    // An agent homed on node B with a dialog held there (B's supervision
    // master switch is off: every dialog is held).
    call(
        &mut api,
        "agent.create",
        json!({ "name": "far", "harness": "fake", "node": "node-b" }),
    )
    .await;
    let far = conversation_id(&mut api, "far@node-b").await;
    send(&mut api, &far, "/fake tool bash git push --force").await;

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&a, &[]);
    c.goto(&link).await.expect("pair");
    wait_js(
        &c,
        "two healthy nodes, one tripped breaker, and node B's agent needing you",
        Duration::from_secs(20),
        "return document.querySelectorAll('#nodes li.node.healthy').length === 2
            && document.querySelector('#nodes li[data-node=\"node-b\"]')
            && document.querySelector('#tripped-breakers b')?.textContent === '1'
            && document.querySelector('#holds-waiting b')?.textContent === '1'
            && document.querySelector('#agents li[data-agent=\"far@node-b\"]')?.dataset.state === 'needs-you'
            && document.querySelector('#agents li[data-agent=\"coder\"]')",
    )
    .await;
    shot(
        &c,
        "phone-5-fleet-two-nodes",
        "phone: a fleet of two healthy nodes, one tripped breaker, and node B's agent far@node-b with a held dialog",
    )
    .await;
    click(&c, "#holds-waiting").await;
    wait_js(
        &c,
        "node B's hold in the inbox",
        Duration::from_secs(20),
        "return document.querySelector('#holds li.hold .node')?.textContent === 'on node-b'
            && document.querySelector('#holds li.hold pre.subject')?.textContent === 'git push --force'",
    )
    .await;
    shot(
        &c,
        "phone-5b-hold-on-node-b",
        "phone: the holds inbox of node A listing a dialog held on node B",
    )
    .await;
    // Denied from node A's page: forwarded to node B, audited there as a
    // human's answer.
    answer_hold(
        &c,
        &mut api,
        "far@node-b",
        "deny",
        "node B's hold answered from node A",
        |e| e["outcome"] == "sent",
    )
    .await;
    click(&c, "#nav-fleet").await;
    click(&c, "#tripped-breakers").await;
    wait_js(
        &c,
        "the tripped monitor",
        Duration::from_secs(20),
        "return document.querySelector('#monitors li.monitor.tripped button.rearm')",
    )
    .await;
    shot(
        &c,
        "phone-6-monitor-tripped",
        "phone: the monitors view with the tripped monitor and its Re-arm button",
    )
    .await;
    click(&c, "#monitors li.monitor.tripped button.rearm").await;
    wait_js(
        &c,
        "the monitor armed again",
        Duration::from_secs(20),
        "return document.querySelector('#monitors li.monitor.armed') && !document.querySelector('button.rearm')",
    )
    .await;
    eventually("the node says armed", Duration::from_secs(10), async || {
        state(&mut api, "armed").await
    })
    .await;
    shot(
        &c,
        "phone-7-monitor-rearmed",
        "phone: the same monitor armed again after one tap",
    )
    .await;

    // A new agent's node: the picker offers both members, the one with the
    // most room chosen (node-a: no live conversation; node-b runs far's);
    // picking node-b homes it there.
    click(&c, "#nav-fleet").await;
    click(&c, "#new-agent").await;
    wait_js(
        &c,
        "the node picker with node-a chosen as the one with the most room",
        Duration::from_secs(20),
        "const s = document.querySelector('#new-agent-node');
         return s && s.options.length === 2 && s.value === 'node-a'
            && s.selectedOptions[0].textContent === 'node-a (this node, most room)'",
    )
    .await;
    wait_js(
        &c,
        "node-b picked",
        Duration::from_secs(5),
        "const s = document.querySelector('#new-agent-node');
         s.value = 'node-b'; s.dispatchEvent(new Event('change'));
         return s.value === 'node-b'",
    )
    .await;
    type_into(&c, "#new-agent-name", "placed").await;
    shot(
        &c,
        "phone-8-create-on-node-b",
        "phone: the new-agent form with its node picker, node-b picked",
    )
    .await;
    click(&c, "#create-agent").await;
    wait_js(
        &c,
        "the new agent's page, addressed on node-b",
        Duration::from_secs(20),
        "return location.hash === '#/agent/placed%40node-b' && document.querySelector('#agent dl')",
    )
    .await;
    let on_b = call(&mut api, "agent.get", json!({ "agent": "placed@node-b" })).await;
    assert_eq!(on_b["agent"]["name"], "placed", "{on_b}");
    let e = api
        .call("agent.get", json!({ "agent": "placed@node-a" }))
        .await
        .expect_err("not on node-a");
    assert!(e.to_string().contains("placed"), "{e}");

    // node-b's page, read through node-a: health, runtime, capacity, the
    // harness setting that is wrong there, prices and supervision defaults.
    click(&c, "#nav-fleet").await;
    click(&c, "#nodes li[data-node=\"node-b\"] a.node-link").await;
    wait_js(
        &c,
        "node-b's page",
        Duration::from_secs(20),
        "return location.hash === '#/node/node-b'
            && document.querySelector('#node-health')?.textContent.startsWith('healthy')
            && document.querySelector('#node-runtime')?.textContent.startsWith('local')
            && /CPUs/.test(document.querySelector('#node-capacity')?.textContent || '')
            && [...document.querySelectorAll('#harness-warnings li')].some((li) => li.textContent.includes('/nonexistent/codex'))
            && document.querySelector('#master-switch')?.textContent === 'off'",
    )
    .await;
    shot(
        &c,
        "phone-9-node-b",
        "phone: node-b's page read through node-a, with its wrong Codex program named",
    )
    .await;

    // The owner removes node-b: node-b's own console says so.
    let (code, _, err) = warren(&["fleet", "remove", "node-b"], &a.path());
    assert_eq!(code, 0, "fleet remove: {err}");
    let (link_b, _) = pairing_link(&b, &[]);
    c.goto(&link_b).await.expect("node-b's console");
    let said = wait_js(
        &c,
        "node-b says it was removed",
        Duration::from_secs(20),
        "return document.querySelector('#removed-from')?.textContent",
    )
    .await;
    assert!(
        said.as_str()
            .is_some_and(|t| t.contains("removed this node") && t.contains("agents are kept")),
        "{said}"
    );
    shot(
        &c,
        "phone-10-removed",
        "phone: node-b's own fleet view after the owner removed it",
    )
    .await;
    c.close().await.expect("close");
}

/// The one-form attach on node-a's console, for an agent homed on node-b:
/// keywords and their mode, watch-only, the breaker's numbers and a model in
/// one submit; the monitor agent is created from the advisor persona on the
/// target's node (node-b) and attached there, nothing on node-a. The
/// console holds a token the fleet trusts (the owner key's), as a console
/// reaching other members must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attach_form_creates_the_monitor_on_the_targets_node() {
    let (_one, driver) = start_driver().await;
    let (keys, a, b) = two_node_fleet().await;
    let mut on_b = b.client().await;
    call(&mut on_b, "agent.create", json!({ "name": "coder", "harness": "fake" })).await;
    let (code, out, err) = warren(
        &[
            "token",
            "mint",
            "--key-file",
            &keys.path().join("owner.key").display().to_string(),
            "--right",
            "node:admin",
            "--ttl",
            "600",
        ],
        keys.path(),
    );
    assert_eq!(code, 0, "token mint: {err}");
    let token = out.lines().next().expect("token").trim().to_string();

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 1280, 800, profile.path()).await;
    let (link, _) = pairing_link(&a, &[]);
    c.goto(&link).await.expect("pair");
    wait_js(
        &c,
        "signed in",
        Duration::from_secs(20),
        "return document.body.dataset.conn === 'online'",
    )
    .await;
    c.execute(
        "localStorage.setItem('warren.token', arguments[0]); location.hash = '#/monitors'; location.reload();",
        vec![json!(token)],
    )
    .await
    .expect("sign in with the fleet's token");
    wait_js(
        &c,
        "the monitors view, online",
        Duration::from_secs(20),
        "return document.body.dataset.conn === 'online' && document.querySelector('#attach-form')",
    )
    .await;
    click(&c, "#attach-monitor-open").await;
    type_into(&c, "#attach-keywords", "segfault, panic").await;
    type_into(&c, "#attach-target", "coder").await;
    type_into(&c, "#attach-max-cycles", "3").await;
    type_into(&c, "#attach-model", "model-x").await;
    type_into(&c, "#attach-harness", "fake").await;
    c.execute(
        "document.querySelector('#attach-mode').value = 'word'; document.querySelector('#attach-inject').value = 'watch';",
        vec![],
    )
    .await
    .expect("choose word mode and watch-only");
    let defaults = c
        .execute(
            "return ['#attach-max-wakes', '#attach-window-mins'].map((s) => document.querySelector(s).value)",
            vec![],
        )
        .await
        .expect("defaults");
    assert_eq!(defaults, json!(["20", "10"]), "the breaker's defaults are filled in");
    shot(
        &c,
        "desktop-attach-form",
        "desktop: the one-form attach filled in for an agent on another node",
    )
    .await;
    click(&c, "#attach-form button[type=submit]").await;
    let done = wait_js(
        &c,
        "attached",
        Duration::from_secs(30),
        "const d = document.querySelector('#attach-done'); const e = document.querySelector('#attach-status .error');
         return d ? d.textContent : (e ? 'error: ' + e.textContent : null)",
    )
    .await;
    let done = done.as_str().unwrap_or_default().to_string();
    assert!(done.contains("monitor-coder@node-b"), "{done}");

    let m = call(&mut on_b, "agent.get", json!({ "agent": "monitor-coder" })).await;
    assert_eq!(m["agent"]["persona"], node::monitors::ADVISOR_PERSONA, "{m}");
    assert_eq!(m["agent"]["model"], "model-x", "{m}");
    assert_eq!(m["agent"]["harness"], "fake", "{m}");
    let l = call(&mut on_b, "monitor.list", json!({})).await;
    let at = &l["attachments"][0];
    assert_eq!(at["monitor"], "monitor-coder", "{l}");
    assert_eq!(at["target"], json!({ "agent": "coder" }), "{l}");
    assert_eq!(at["inject"], false, "watch-only: {l}");
    assert_eq!(at["breaker"]["max_cycles"], 3, "{l}");
    assert_eq!(at["breaker"]["max_wakes"], 20, "{l}");
    let kws: Vec<(String, String)> = at["trigger"]["keywords"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|k| {
            (
                k["text"].as_str().unwrap_or_default().into(),
                k["mode"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    assert_eq!(
        kws,
        [
            ("segfault".to_string(), "word".to_string()),
            ("panic".to_string(), "word".to_string())
        ],
        "{l}"
    );
    let mut on_a = a.client().await;
    let here = call(&mut on_a, "agent.list", json!({})).await;
    assert_eq!(here["agents"], json!([]), "nothing on node-a: {here}");
    let here = call(&mut on_a, "monitor.list", json!({})).await;
    assert_eq!(here["attachments"], json!([]), "{here}");
    c.close().await.expect("close");
}

/// Over TLS (`[tls] self_signed`): the console loads from `https://`, pairs,
/// and its connection is `wss://` on the same origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_over_tls() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start_with_config("[tls]\nself_signed = true\n");
    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&node, &[]);
    assert!(link.starts_with("https://"), "{link}");
    c.goto(&link).await.expect("open the pairing link");
    wait_js(
        &c,
        "signed in over wss",
        Duration::from_secs(20),
        "return location.protocol === 'https:' && document.body.dataset.conn === 'online' && document.querySelector('#nodes li')",
    )
    .await;
    let secure = c
        .execute("return window.isSecureContext", vec![])
        .await
        .expect("secure");
    assert_eq!(secure, json!(true), "a secure context (what a phone needs)");
    shot(
        &c,
        "tls-fleet",
        "phone: the fleet view over https/wss with a self-signed certificate",
    )
    .await;
    c.close().await.expect("close");
}
