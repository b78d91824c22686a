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

#[path = "browser/beyond.rs"]
mod beyond;
#[path = "browser/chat.rs"]
mod chat;
#[path = "browser/outbox.rs"]
mod outbox;
#[path = "browser/push.rs"]
mod push;
#[path = "browser/scale.rs"]
mod scale;
mod support;
#[path = "browser/tasks.rs"]
mod tasks;
mod web;
#[path = "browser/workspace.rs"]
mod workspace;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use web::*;

/// Keys typed one at a time into the terminal per viewport (the echo figure).
const ECHO_KEYS: usize = 200;

/// One Claude Code assistant line (the spend ledger's input) of `model` on `day`.
fn claude_line(session: &str, msg: &str, model: &str, day: &str, input: u64, output: u64) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/w/repo",
        "sessionId": session, "version": "2.1.3", "type": "assistant",
        "message": {
            "id": msg, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": output, "service_tier": "standard"},
        },
        "uuid": format!("u-{msg}"), "timestamp": format!("{day}T09:00:00.000Z"), "requestId": format!("req_{msg}"),
    })
    .to_string()
        + "\n"
}

/// An agent whose home holds Claude session files of the last days: a
/// priced model and one the price table does not know.
async fn agent_with_spend(node: &TestNode, api: &mut warren::client::Client) {
    call(
        api,
        "agent.create",
        json!({ "name": "spender", "harness": "fake", "budget": { "usd_per_hour": 100.0, "burst_usd": 50.0 } }),
    )
    .await;
    let dir = node.path().join("agents/spender/home/.claude/projects/-w-repo");
    std::fs::create_dir_all(&dir).expect("projects dir");
    let mut text = String::new();
    for back in 0..6u64 {
        let day = utc_day(back);
        let n = back + 1;
        text += &claude_line(
            "s-1",
            &format!("m{back}"),
            "claude-sonnet-4-5-20250929",
            &day,
            20_000 * n,
            4_000 * n,
        );
        if back % 2 == 0 {
            text += &claude_line(
                "s-1",
                &format!("h{back}"),
                "claude-haiku-4-5-20251001",
                &day,
                50_000,
                9_000,
            );
        }
    }
    text += &claude_line("s-1", "x0", "acme-mystery-1", &utc_day(0), 1_000, 500);
    std::fs::write(dir.join("s-1.jsonl"), text).expect("session file");
    eventually(
        "the ledger indexed the session file",
        Duration::from_secs(30),
        async || {
            let h = api
                .call("spend.history", json!({ "since_day": utc_day(13) }))
                .await
                .ok()?;
            let models: Vec<&str> = h["days"]
                .as_array()?
                .iter()
                .filter_map(|r| r["model"].as_str())
                .collect();
            (models.contains(&"acme-mystery-1") && models.contains(&"claude-sonnet-4-5-20250929")).then_some(())
        },
    )
    .await;
}

/// Taps `decision` (`approve` or `deny`) on the shown hold, waits until no
/// hold is left, and checks the agent's audit has a human's answer with that
/// decision for which `also` holds.
async fn answer_hold(
    c: &fantoccini::Client,
    api: &mut warren::client::Client,
    agent: &str,
    decision: &str,
    what: &str,
    also: impl Fn(&Value) -> bool,
) {
    click(c, &format!("#holds li.hold button.{decision}")).await;
    wait_js(
        c,
        what,
        Duration::from_secs(20),
        "return document.querySelector('#no-holds') && document.title === 'warren'",
    )
    .await;
    let audit = call(api, "supervision.audit", json!({ "agent": agent })).await;
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["decision"] == decision && e["trigger"] == "answer" && also(e)),
        "the {decision} is audited as a human's: {audit}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser_at_desktop_and_phone_sizes() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start_logging_debug("local", "");
    let base = console_base(&node);
    let mut api = node.client().await;
    let mut tokens_seen = vec![
        std::fs::read_to_string(node.path().join("admin.token"))
            .expect("admin token")
            .trim()
            .to_string(),
    ];
    let mut figures = vec![];
    let mut measured = serde_json::Map::new();
    agent_with_spend(&node, &mut api).await;
    call(
        &mut api,
        "agent.create",
        json!({ "name": "postie", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;

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
        // The node's supervision defaults show, and follow a `config.set` live.
        wait_js(
            &c,
            "the supervision defaults, master switch off",
            Duration::from_secs(20),
            "const d = document.querySelector('#supervision-defaults'); \
             return d && d.querySelector('#master-switch').textContent === 'off' \
             && d.querySelector('[data-class=command_exec]').textContent.includes('auto approve')",
        )
        .await;
        let dir = node.path();
        let flip = |on: Value| warren::client::unix_call(&dir, "config.set", json!({ "supervision": on }));
        flip(json!({ "enabled": true })).await.expect("config.set");
        wait_js(
            &c,
            "the flipped master switch, without a reload",
            Duration::from_secs(20),
            "return document.querySelector('#master-switch')?.textContent === 'on'",
        )
        .await;
        flip(Value::Null).await.expect("config.set null");
        shot(
            &c,
            &format!("{label}-1-fleet"),
            &format!(
                "{label} {width}x{height}: the fleet view just after pairing (nodes, agents, holds and breakers tiles)"
            ),
        )
        .await;

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
        let budget = c
            .execute("return document.querySelector('#budget')?.textContent", vec![])
            .await
            .expect("budget line");
        assert_eq!(budget, json!("none"), "a new agent has no budget");
        shot(
            &c,
            &format!("{label}-2-agent"),
            &format!(
                "{label}: a new agent's view (definition, grants, conversations, supervision grid, activity, mail)"
            ),
        )
        .await;

        // Start a conversation; its terminal shows the CLI's prompt.
        click(&c, "#agent button.primary").await;
        wait_js(
            &c,
            "the conversation's terminal at IDLE",
            Duration::from_secs(30),
            "return location.hash.startsWith('#/conv/') && document.querySelector('#conv-status')?.textContent === 'IDLE' && document.querySelector('#terminal').textContent.trim().length > 0",
        )
        .await;
        // The CLI's banner star is SGR red and its words bold: the page
        // draws that cell red and those bold, from the node's cells.
        let styled = wait_js(
            &c,
            "the banner's red star and bold words",
            Duration::from_secs(20),
            "const spans = [...document.querySelectorAll('#terminal .trow span')];
             const star = spans.find(e => e.textContent === '✻');
             const words = spans.find(e => e.textContent === 'Welcome to Fake Code!');
             if (!star || !words) return null;
             const rgb = getComputedStyle(star).color.match(/\\d+/g).map(Number);
             return { rgb, weight: getComputedStyle(words).fontWeight, plain: getComputedStyle(spans.find(e => e.textContent.includes('session:'))).color };",
        )
        .await;
        let rgb: Vec<u64> = styled["rgb"]
            .as_array()
            .expect("rgb")
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        assert!(
            rgb[0] > 180 && rgb[1] < 120 && rgb[2] < 120,
            "the star is not red: {styled}"
        );
        assert_eq!(styled["weight"], "700", "the banner's words are not bold: {styled}");
        assert_ne!(
            styled["plain"].as_str(),
            Some(format!("rgb({}, {}, {})", rgb[0], rgb[1], rgb[2]).as_str()),
            "unstyled text is red too: {styled}"
        );
        // The cursor is drawn on the cell the node's screen says.
        let conv_now = c
            .execute(
                "return decodeURIComponent(location.hash.slice('#/conv/'.length))",
                vec![],
            )
            .await
            .expect("conversation id");
        let screen = call(
            &mut api,
            "conversation.screen",
            json!({ "conversation": conv_now, "cells": true }),
        )
        .await;
        let cursor = &screen["cells"]["cursor"];
        assert_eq!(
            screen["cells"]["rows"][0][0]["fg"],
            json!(1),
            "the node's cells: {screen}"
        );
        let drawn = wait_js(
            &c,
            "the cursor element",
            Duration::from_secs(20),
            "const cur = document.querySelector('#terminal .cursor');
             if (!cur) return null;
             const row = cur.closest('.trow');
             const r = document.createRange();
             r.setStart(row, 0);
             r.setEndBefore(cur);
             return { row: Number(row.dataset.row), col: [...r.toString()].length, prompt: row.textContent };",
        )
        .await;
        assert_eq!(
            (&drawn["row"], &drawn["col"]),
            (&cursor["row"], &cursor["col"]),
            "the cursor is not drawn at the node's cursor cell: {drawn} vs {cursor}"
        );
        assert!(drawn["prompt"].as_str().unwrap_or_default().starts_with('❯'), "{drawn}");
        shot(
            &c,
            &format!("{label}-3a-terminal-colours"),
            &format!("{label}: the live terminal from the node's styled cells: the banner's red star and bold words, the cursor on the prompt"),
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
        // Keys typed on the terminal reach the CLI as they are. The page
        // times each one, keydown to its echo in the drawn terminal: five
        // lines of 40 keys, each line a message of its own.
        let keys_css = if *label == "phone" { "#term-keys" } else { "#terminal" };
        let lines: Vec<String> = (0..ECHO_KEYS / 40)
            .map(|i| {
                let tag = ["alpha", "bravo", "charlie", "delta", "echo"][i % 5];
                format!("{tag}{}", "abcdefghijklmnopqrstuvwxyz0123456789xyzw")[..40].to_string()
            })
            .collect();
        let mut samples = echo_latency(&c, keys_css, &lines).await;
        assert_eq!(samples.len(), ECHO_KEYS, "one echo per key");
        samples.sort_by(f64::total_cmp);
        let (p50, p99) = (percentile(&samples, 0.5), percentile(&samples, 0.99));
        // Reported, not asserted (a timing figure on a shared machine): the
        // target is p99 <= 50 ms on loopback. What keeps it low, TCP_NODELAY
        // on the node's end, is asserted directly in console.rs.
        figures.push(format!(
            "{label}: keystroke-to-echo over {} keys p50 {p50:.1} ms, p99 {p99:.1} ms",
            samples.len()
        ));
        measured.insert(
            label.to_string(),
            json!({ "viewport": format!("{width}x{height}"), "echo_keys": samples.len(), "echo_p50_ms": p50, "echo_p99_ms": p99,
                    "echo_max_ms": samples.last() }),
        );
        wait_js(
            &c,
            "IDLE again",
            Duration::from_secs(20),
            "return document.querySelector('#conv-status')?.textContent === 'IDLE'",
        )
        .await;
        shot(&c, &format!("{label}-3-conversation"), &format!("{label}: a conversation after {ECHO_KEYS} keys typed into its terminal, their replies in the transcript")).await;

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
            "return document.querySelector('#holds li.hold pre.command')?.textContent === 'git push --force'",
        )
        .await;
        shot(
            &c,
            &format!("{label}-4-hold-command"),
            &format!(
                "{label}: the holds inbox with a held Bash dialog, its command shown monospace above Approve / Deny"
            ),
        )
        .await;
        answer_hold(&c, &mut api, &agent, "approve", "the hold answered", |e| {
            e["outcome"] == "sent"
        })
        .await;

        // An edit: the hold shows the file and its diff, and is denied with
        // one tap.
        click(&c, "#nav-fleet").await;
        c.goto(&format!("{base}#/conv/{conv}")).await.expect("the conversation");
        wait_js(
            &c,
            "the conversation at IDLE",
            Duration::from_secs(30),
            "return document.querySelector('#conv-status')?.textContent === 'IDLE' && document.querySelector('#send-text')",
        )
        .await;
        type_into(&c, "#send-text", "/fake edit notes/plan.txt").await;
        click(&c, "#send-button").await;
        click(&c, "#needs-you").await;
        let hold = wait_js(
            &c,
            "the edit's hold with its file and diff",
            Duration::from_secs(30),
            "const card = document.querySelector('#holds li.hold');
             const add = card?.querySelector('pre.diff .add');
             return add ? { add: add.textContent, paths: card.querySelector('pre.paths')?.textContent, cls: card.dataset.class,
                            approve: !!card.querySelector('button.approve'), deny: !!card.querySelector('button.deny') } : null",
        )
        .await;
        assert!(
            hold["add"]
                .as_str()
                .unwrap_or_default()
                .contains("+ edited by fake-cli"),
            "{hold}"
        );
        assert!(
            hold["paths"].as_str().unwrap_or_default().contains("plan.txt"),
            "{hold}"
        );
        assert_eq!(
            (&hold["approve"], &hold["deny"]),
            (&json!(true), &json!(true)),
            "{hold}"
        );
        shot(
            &c,
            &format!("{label}-4b-hold-diff"),
            &format!("{label}: a held edit dialog: its file and its diff (+ lines green) in monospace, Approve / Deny one tap each"),
        )
        .await;
        answer_hold(&c, &mut api, &agent, "deny", "the edit denied", |_| true).await;

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
            c.execute("document.querySelector('#attach-inject').value = 'watch';", vec![])
                .await
                .expect("choose watch-only");
            click(&c, "#attach-form button[type=submit]").await;
            wait_js(
                &c,
                "the attach form's outcome",
                Duration::from_secs(20),
                "return !!document.querySelector('#attach-done')",
            )
            .await;
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
            shot(
                &c,
                &format!("{label}-5-monitors"),
                "desktop: the monitors view with a new watch-only attachment, armed",
            )
            .await;
        }

        // Mail: the agent's unread messages in its view, and the count on
        // the fleet view.
        for body in ["the build is green", "please look at the flaky test"] {
            call(
                &mut api,
                "mailbox.send",
                json!({ "from": "postie", "to": agent, "body": body, "context": "ci" }),
            )
            .await;
        }
        c.goto(&format!("{base}#/agent/{agent}")).await.expect("the agent view");
        wait_js(
            &c,
            "the agent's two unread messages",
            Duration::from_secs(20),
            "const texts = [...document.querySelectorAll('#mail li .text')].map(e => e.textContent);
             return texts.includes('the build is green') && texts.includes('please look at the flaky test')
                 && document.querySelector('#mail-count')?.textContent.startsWith('(2 unread')",
        )
        .await;
        c.execute("document.getElementById('mail').scrollIntoView()", vec![])
            .await
            .expect("scroll");
        shot(
            &c,
            &format!("{label}-7-mail"),
            &format!("{label}: an agent's mailbox: two unread messages with sender, context and body (read-only: the agent acknowledges its own)"),
        )
        .await;

        // Usage: spend per day as a bar chart; the unpriced model is named
        // "unpriced", never $0.
        click(&c, "#nav-usage").await;
        let usage = wait_js(
            &c,
            "the usage chart",
            Duration::from_secs(20),
            "const bars = document.querySelectorAll('#usage-chart rect.bar:not(.unpriced)');
             const unpriced = [...document.querySelectorAll('#usage-table tr')].find(r => r.dataset.name === 'acme-mystery-1');
             return bars.length >= 6 && unpriced ? { bars: bars.length, marks: document.querySelectorAll('#usage-chart rect.unpriced').length,
                 spend: unpriced.lastElementChild.textContent, total: document.querySelector('#usage-total').textContent } : null",
        )
        .await;
        assert_eq!(usage["spend"], "unpriced", "{usage}");
        assert_eq!(usage["marks"], json!(1), "one day has unpriced use: {usage}");
        assert!(
            usage["total"]
                .as_str()
                .unwrap_or_default()
                .contains("unpriced (acme-mystery-1)"),
            "{usage}"
        );
        shot(
            &c,
            &format!("{label}-6-usage"),
            &format!("{label}: usage: spend per UTC day for 14 days as an SVG bar chart stacked by model, the unpriced model marked and listed as unpriced"),
        )
        .await;
        click(&c, "#usage-by button[data-key=agent]").await;
        wait_js(
            &c,
            "the chart by agent",
            Duration::from_secs(10),
            "return document.querySelector('#usage-chart rect.bar[data-series=\"spender\"]') && !document.querySelector('#usage-chart rect.bar[data-series^=\"claude\"]')",
        )
        .await;
        // A series per node (one node here): every bar is this node's.
        click(&c, "#usage-by button[data-key=node]").await;
        let nodes = wait_js(
            &c,
            "the chart by node",
            Duration::from_secs(10),
            "const s = new Set([...document.querySelectorAll('#usage-chart rect.bar:not(.unpriced)')].map((b) => b.dataset.series));
             return s.size === 1 && !s.has('spender') ? [...s] : null",
        )
        .await;
        assert_eq!(nodes.as_array().map(Vec::len), Some(1), "{nodes}");
        click(&c, "#nav-fleet").await;
        let tiles = wait_js(
            &c,
            "the fleet's mail count and today's spend",
            Duration::from_secs(20),
            &format!(
                "const mail = document.querySelector('#mail-waiting'); const spend = document.querySelector('#spend-today');
                 return mail && spend && mail.textContent.includes('{agent} 2') ? [mail.textContent, spend.textContent] : null"
            ),
        )
        .await;
        let spend_today = tiles[1].as_str().unwrap_or_default();
        assert!(
            spend_today.contains('$') && spend_today.contains("unpriced (acme-mystery-1)"),
            "{tiles}"
        );
        shot(
            &c,
            &format!("{label}-8-fleet-mail-spend"),
            &format!(
                "{label}: the fleet view with the unread-mail tile (per agent) and today's spend (dollars + unpriced)"
            ),
        )
        .await;

        // A budgeted agent's line: its rate, burst, what is left, its state
        // (its session files' spend is charged, and accrues back at $100/h).
        c.goto(&format!("{base}#/agent/spender")).await.expect("spender's view");
        let budget = wait_js(
            &c,
            "spender's budget line",
            Duration::from_secs(20),
            "const b = document.querySelector('#budget')?.textContent || ''; return b.includes('available') ? b : null",
        )
        .await;
        let budget = budget.as_str().unwrap_or_default();
        assert!(
            budget.starts_with("$100.00/h, burst $50.00 · $") && budget.ends_with("available · ok"),
            "{budget}"
        );

        // First paint of the fleet view, signed in, from a cold cache.
        let (ms, http_bytes, ws_bytes) = measure_fleet_paint(&c, &base).await;
        figures.push(format!(
            "{label} {width}x{height}: fleet view usable after {ms:.0} ms; {http_bytes} bytes over HTTP, {ws_bytes} bytes of WebSocket frames"
        ));
        if let Some(m) = measured.get_mut(*label).and_then(Value::as_object_mut) {
            m.insert("first_paint_ms".into(), json!(ms));
            m.insert("fleet_http_bytes".into(), json!(http_bytes));
            m.insert("fleet_ws_bytes".into(), json!(ws_bytes));
        }
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
        "return document.querySelector('#supervision') && document.querySelector('#budget')?.textContent === 'none'",
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
    shot(
        &c,
        "companion-conversation",
        "phone, companion token: a conversation read-only (no send box, keys box or controls)",
    )
    .await;
    let token = c
        .execute("return localStorage.getItem('warren.token')", vec![])
        .await
        .expect("token");
    tokens_seen.push(token.as_str().expect("token").to_string());
    assert_no_token_in_urls(&c, &tokens_seen).await;
    c.close().await.expect("close");

    let log = node.log_at_debug();
    for t in &tokens_seen {
        assert!(!log.contains(t.as_str()), "a token in the node's log");
    }
    for f in &figures {
        eprintln!("figure: {f}");
    }
    let path = shots_dir().join("figures.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&Value::Object(measured)).expect("json") + "\n",
    )
    .expect("write figures.json");
    eprintln!("figures: {}", path.display());
}
