//! The web console in a real browser: Debian's headless Chromium driven
//! through its chromedriver (installed by `deploy/scripts/install-browser.sh`,
//! never downloaded) with fantoccini, at 1280x800 and 393x851. It pairs with a
//! one-time code (the QR's link), sees the fleet view, creates an agent,
//! starts a conversation, sends a message and sees the reply in the terminal
//! and the transcript, answers a hold, and checks a companion sees no write
//! controls. It measures the console's first paint (navigation to a usable
//! fleet view) and the bytes that took, and saves screenshots under
//! `target/browser-shots/`. A missing browser fails the test; it never skips.
//!
//! A slow tier of its own: `cargo test -p warren --test browser` (`.ci/run`).

mod support;
mod web;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use web::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser_at_desktop_and_phone_sizes() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start();
    let base = node
        .target()
        .url
        .replace("ws://", "http://")
        .replace(console_api::WS_PATH, "/");
    let mut api = node.client().await;
    let mut tokens_seen = vec![
        std::fs::read_to_string(node.path().join("admin.token"))
            .expect("admin token")
            .trim()
            .to_string(),
    ];
    let mut figures = vec![];

    for (label, width, height) in VIEWPORTS {
        let profile = tempfile::tempdir().expect("profile dir");
        let c = browser(&driver, *width, *height, profile.path()).await;

        // Pair: the QR's link opens the console with the code in the fragment.
        let (link, _) = pairing_link(&node, &[]);
        c.goto(&link).await.expect("open the pairing link");
        wait_js(
            &c,
            "signed in, online, the fleet view",
            Duration::from_secs(20),
            "return document.body.dataset.conn === 'online' && document.querySelector('#nodes li')",
        )
        .await;
        let token = c
            .execute("return localStorage.getItem('warren.token')", vec![])
            .await
            .expect("token");
        tokens_seen.push(token.as_str().expect("a stored token").to_string());
        shot(&c, &format!("{label}-1-fleet")).await;

        // Create an agent from the fleet view.
        let agent = format!("web-{label}");
        click(&c, "#new-agent").await;
        type_into(&c, "#new-agent-name", &agent).await;
        click(&c, "#create-agent").await;
        wait_js(
            &c,
            "the agent view",
            Duration::from_secs(20),
            &format!("return location.hash === '#/agent/{agent}' && document.querySelector('#supervision')"),
        )
        .await;
        wait_js(
            &c,
            "the agent's mail and supervision activity",
            Duration::from_secs(20),
            "return document.querySelector('#mail li') && document.querySelector('#activity li')",
        )
        .await;
        shot(&c, &format!("{label}-2-agent")).await;

        // Start a conversation; its terminal shows the CLI's prompt.
        click(&c, "#agent button.primary").await;
        wait_js(
            &c,
            "the conversation's terminal at IDLE",
            Duration::from_secs(30),
            "return location.hash.startsWith('#/conv/') && document.querySelector('#conv-status')?.textContent === 'IDLE' && document.querySelector('#terminal').textContent.trim().length > 0",
        )
        .await;

        // Send a message; the reply shows in the terminal and the transcript.
        let text = format!("hello from the {label} browser");
        type_into(&c, "#send-text", &text).await;
        click(&c, "#send-button").await;
        let reply = format!("echo: {text}");
        wait_js(
            &c,
            "the reply in the terminal and the transcript",
            Duration::from_secs(30),
            &format!(
                "const want = {reply:?};
                 const term = document.querySelector('#terminal').textContent.includes(want);
                 const tr = [...document.querySelectorAll('#transcript li.speaker-agent .text')].some(e => e.textContent === want);
                 const me = [...document.querySelectorAll('#transcript li.speaker-human .text')].some(e => e.textContent === {text:?});
                 return term && tr && me"
            ),
        )
        .await;
        let conv = c
            .execute(
                "return decodeURIComponent(location.hash.slice('#/conv/'.length))",
                vec![],
            )
            .await
            .expect("conversation id");
        let conv = conv.as_str().expect("id").to_string();
        let events = transcript(&mut api, &conv).await;
        assert!(
            events
                .iter()
                .any(|e| e["speaker"] == "human" && e["text"] == text.as_str()),
            "the node recorded the browser's message as the human's"
        );
        // Keys typed on the terminal reach the CLI as they are; each echo
        // is timed by the page (keydown -> the screen showing it).
        let keys_css = if *label == "phone" { "#term-keys" } else { "#terminal" };
        let word = "keystrokesfromthebrowser";
        let mut samples = type_in_terminal(&c, keys_css, word).await;
        wait_js(
            &c,
            "the typed line's reply",
            Duration::from_secs(30),
            &format!(
                "return [...document.querySelectorAll('#transcript li.speaker-agent .text')].some(e => e.textContent === 'echo: {word}')"
            ),
        )
        .await;
        assert_eq!(samples.len(), word.len(), "one echo per key");
        samples.sort_by(f64::total_cmp);
        // The target is p99 <= 50 ms on loopback (printed below); a node
        // whose small frames wait for delayed ACKs (no TCP_NODELAY) sits
        // near 45 ms on every key, which this catches without flaking on a
        // busy machine.
        assert!(percentile(&samples, 0.5) < 25.0, "keystroke echo p50 {:?}", samples);
        figures.push(format!(
            "{label}: keystroke-to-echo over {} keys p50 {:.1} ms, p99 {:.1} ms",
            samples.len(),
            percentile(&samples, 0.5),
            percentile(&samples, 0.99)
        ));
        wait_js(
            &c,
            "IDLE again",
            Duration::from_secs(20),
            "return document.querySelector('#conv-status')?.textContent === 'IDLE'",
        )
        .await;
        shot(&c, &format!("{label}-3-conversation")).await;

        // A dialog the supervision holds (its master switch is off by
        // default): the title counts it, the holds view approves it.
        type_into(&c, "#send-text", "/fake tool bash git push --force").await;
        click(&c, "#send-button").await;
        wait_js(
            &c,
            "the title and the favicon counting the hold",
            Duration::from_secs(30),
            "return document.title === '(1) warren' && document.querySelector('link[rel=icon]').href.startsWith('data:image/png')",
        )
        .await;
        click(&c, "#needs-you").await;
        wait_js(
            &c,
            "the hold",
            Duration::from_secs(20),
            "return document.querySelector('#holds li.hold pre')?.textContent.includes('git push')",
        )
        .await;
        shot(&c, &format!("{label}-4-hold")).await;
        click(&c, "#holds li.hold button.approve").await;
        wait_js(
            &c,
            "the hold answered",
            Duration::from_secs(20),
            "return document.querySelector('#no-holds') && document.title === 'warren'",
        )
        .await;
        let audit = call(&mut api, "supervision.audit", json!({ "agent": agent })).await;
        assert!(
            audit["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .any(|e| e["decision"] == "approve" && e["trigger"] == "answer" && e["outcome"] == "sent"),
            "the approval is audited as a human's: {audit}"
        );

        // A nudge from the agent view (the companion's allowlisted action).
        if *label == "phone" {
            c.goto(&format!("{base}#/agent/{agent}")).await.expect("the agent view");
            click(&c, "button.nudge").await;
            wait_js(
                &c,
                "the nudge's outcome",
                Duration::from_secs(20),
                "return document.querySelector('#nudge-result')?.textContent === 'nudge: sent'",
            )
            .await;
        }

        // The one-form attach: a watch-only monitor on this agent.
        if *label == "desktop" {
            call(
                &mut api,
                "agent.create",
                json!({ "name": "watcher", "harness": "fake" }),
            )
            .await;
            click(&c, "#nav-monitors").await;
            click(&c, "#attach-monitor-open").await;
            type_into(&c, "#attach-monitor", "watcher").await;
            type_into(&c, "#attach-target", &agent).await;
            type_into(&c, "#attach-keywords", "panic, segfault").await;
            click(&c, "#attach-advise").await;
            click(&c, "#attach-form button[type=submit]").await;
            wait_js(
                &c,
                "the new attachment, armed",
                Duration::from_secs(20),
                "return document.querySelector('#monitors li.monitor.armed')?.textContent.includes('watcher')",
            )
            .await;
            let l = call(&mut api, "monitor.list", json!({})).await;
            let a = &l["attachments"][0];
            assert_eq!(
                (a["monitor"].as_str(), a["inject"].as_bool()),
                (Some("watcher"), Some(false)),
                "{l}"
            );
            shot(&c, &format!("{label}-5-monitors")).await;
        }

        // First paint of the fleet view, signed in, from a cold cache.
        let (ms, http_bytes, ws_bytes) = measure_fleet_paint(&c, &base).await;
        figures.push(format!(
            "{label} {width}x{height}: fleet view usable after {ms:.0} ms; {http_bytes} bytes over HTTP, {ws_bytes} bytes of WebSocket frames"
        ));
        assert_no_token_in_urls(&c, &tokens_seen).await;
        c.close().await.expect("close");
    }

    // A companion (phone): read-only views, no write controls.
    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&node, &["--companion"]);
    c.goto(&link).await.expect("open the companion link");
    wait_js(
        &c,
        "the companion's fleet view",
        Duration::from_secs(20),
        "return document.body.dataset.readOnly === 'yes' && document.querySelector('#agents li')",
    )
    .await;
    let writes = c
        .execute(
            "return document.querySelectorAll('#new-agent-form, #send-form, #conv-controls button, button.approve').length",
            vec![],
        )
        .await
        .expect("count");
    assert_eq!(writes, json!(0), "the companion's fleet view offers writes");
    click(&c, "#agents li a").await;
    wait_js(
        &c,
        "the companion's agent view",
        Duration::from_secs(20),
        "return document.querySelector('#supervision')",
    )
    .await;
    let start = c
        .execute("return [...document.querySelectorAll('button')].filter(b => b.textContent === 'Start conversation' || b.textContent === 'Nudge').length", vec![])
        .await
        .expect("count");
    assert_eq!(
        start,
        json!(0),
        "a read-only companion can neither start conversations nor nudge"
    );
    click(&c, "#conversations li a").await;
    wait_js(
        &c,
        "the companion's conversation view",
        Duration::from_secs(20),
        "return document.querySelector('#terminal').textContent.includes('echo:') && document.querySelector('#transcript li')",
    )
    .await;
    let writes = c
        .execute(
            "return document.querySelectorAll('#send-form, #term-keys, #conv-controls button').length",
            vec![],
        )
        .await
        .expect("count");
    assert_eq!(writes, json!(0), "the companion's conversation view offers writes");
    shot(&c, "companion-conversation").await;
    let token = c
        .execute("return localStorage.getItem('warren.token')", vec![])
        .await
        .expect("token");
    tokens_seen.push(token.as_str().expect("token").to_string());
    assert_no_token_in_urls(&c, &tokens_seen).await;
    c.close().await.expect("close");

    let log = std::fs::read_to_string(node.path().join("node.log")).unwrap_or_default();
    for t in &tokens_seen {
        assert!(!log.contains(t.as_str()), "a token in the node's log");
    }
    for f in &figures {
        eprintln!("figure: {f}");
    }
}

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
    shot(&c, "reconnecting").await;
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
    shot(&c, "reconnected").await;
    c.close().await.expect("close");
}

/// Two real nodes in one fleet, and a monitor whose breaker tripped: the
/// phone's fleet view shows both nodes and the tripped breaker, and re-arms
/// it from the monitors view with one tap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_phone_sees_a_second_node_and_rearms_a_tripped_breaker() {
    let (_one, driver) = start_driver().await;
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
    let b = TestNode::start_with_config(&format!("name = \"node-b\"\n{fleet}"));
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

    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(&driver, 393, 851, profile.path()).await;
    let (link, _) = pairing_link(&a, &[]);
    c.goto(&link).await.expect("pair");
    wait_js(
        &c,
        "two healthy nodes and one tripped breaker",
        Duration::from_secs(20),
        "return document.querySelectorAll('#nodes li.node.healthy').length === 2
            && document.querySelector('#nodes li[data-node=\"node-b\"]')
            && document.querySelector('#tripped-breakers b')?.textContent === '1'",
    )
    .await;
    shot(&c, "phone-5-fleet-two-nodes").await;
    click(&c, "#tripped-breakers").await;
    wait_js(
        &c,
        "the tripped monitor",
        Duration::from_secs(20),
        "return document.querySelector('#monitors li.monitor.tripped button.rearm')",
    )
    .await;
    shot(&c, "phone-6-monitor-tripped").await;
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
    shot(&c, "phone-7-monitor-rearmed").await;
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
    shot(&c, "tls-fleet").await;
    c.close().await.expect("close");
}
