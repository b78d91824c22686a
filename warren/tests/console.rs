//! The web console's HTTP side on a real node, over real HTTP: the browser
//! guard (a foreign Origin's upgrade and an unlisted Host get 403, a request
//! through a proxy is not local, `/healthz` stays open), the security headers
//! on every page, the embedded assets, and pairing (a one-time code from
//! `warren console pair` for a token, once; a companion's writes refused),
//! and the views' data: the screen as styled cells, a hold's command.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use warren::client::{CallError, Client, Target};

/// `127.0.0.1:PORT` of a node.
fn authority(node: &TestNode) -> String {
    let url = node.target().url;
    let rest = url.strip_prefix("ws://").expect("ws url");
    rest.split('/').next().expect("authority").to_string()
}

/// One HTTP/1.1 request with exactly these headers; the status, the header
/// block (lowercased names) and the body. An answer that upgrades is read up
/// to its header block.
fn http(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = vec![];
    let mut chunk = [0u8; 8192];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("read: {e}"),
        }
        let text = String::from_utf8_lossy(&buf);
        if text.starts_with("HTTP/1.1 101") && text.contains("\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn upgrade_headers<'a>(host: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("Host", host),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    h.extend_from_slice(extra);
    h
}

fn assert_security_headers(head: &str, what: &str) {
    assert!(
        head.contains("content-security-policy: default-src 'self';"),
        "{what}: no CSP in\n{head}"
    );
    assert!(head.contains("frame-ancestors 'none'"), "{what}: {head}");
    assert!(
        !head.contains("unsafe-inline") && !head.contains("unsafe-eval"),
        "{what}: {head}"
    );
    assert!(head.contains("referrer-policy: no-referrer"), "{what}: {head}");
    assert!(head.contains("x-content-type-options: nosniff"), "{what}: {head}");
}

#[test]
fn the_guard_refuses_foreign_origins_and_hosts_and_every_page_is_locked_down() {
    let node = TestNode::start_with_config("[console]\nhosts = [\"warren.example\"]\n");
    let addr = authority(&node);
    let port = addr.rsplit(':').next().expect("port").to_string();
    let own_origin = format!("http://{addr}");

    // The page and its assets, from the node's own address.
    let (status, head, body) = http(&addr, "/", &[("Host", &addr)]);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        body.contains("<script type=\"module\" src=\"/assets/app.js\">"),
        "{body}"
    );
    assert_security_headers(&head, "GET /");
    for asset in [
        "app.js",
        "rpc.js",
        "views.js",
        "nodes.js",
        "chat.js",
        "conversation.js",
        "terminal.js",
        "holds.js",
        "usage.js",
        "dom.js",
        "app.css",
    ] {
        let (status, head, body) = http(&addr, &format!("/assets/{asset}"), &[("Host", &addr)]);
        assert_eq!(status, 200, "{asset}: {head}");
        assert!(!body.is_empty(), "{asset} is empty");
        assert_security_headers(&head, asset);
    }
    let (status, _, _) = http(&addr, "/assets/../warren.db", &[("Host", &addr)]);
    assert_ne!(status, 200, "a path outside the assets");
    let (status, _, _) = http(&addr, "/assets/nope.js", &[("Host", &addr)]);
    assert_eq!(status, 404);

    // Loopback names with the node's port, and the configured name, pass.
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "warren.example".into(),
    ] {
        let (status, head, _) = http(&addr, "/", &[("Host", &host)]);
        assert_eq!(status, 200, "{host}: {head}");
    }

    // DNS rebinding: a name that is not the node's gets 403, pages and
    // upgrades alike, with the headers on the refusal too.
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("localhost:{}", 1),
    ] {
        let (status, head, body) = http(&addr, "/", &[("Host", &host)]);
        assert_eq!(status, 403, "{host}: {head}");
        assert!(body.contains("not allowed"), "{body}");
        assert_security_headers(&head, "a 403");
        let (status, _, _) = http(&addr, "/v1/ws", &upgrade_headers(&host, &[]));
        assert_eq!(status, 403, "upgrade with Host {host}");
    }

    // Cross-site WebSocket hijacking: a foreign Origin's upgrade is refused;
    // the node's own origin and no Origin at all (the CLI) upgrade.
    for origin in ["https://evil.example", "null", "http://localhost:1"] {
        let (status, _, body) = http(&addr, "/v1/ws", &upgrade_headers(&addr, &[("Origin", origin)]));
        assert_eq!(status, 403, "Origin {origin}");
        assert!(body.contains("Origin"), "{body}");
    }
    let (status, head, _) = http(&addr, "/v1/ws", &upgrade_headers(&addr, &[("Origin", &own_origin)]));
    assert_eq!(status, 101, "own origin: {head}");
    let (status, head, _) = http(&addr, "/v1/ws", &upgrade_headers(&addr, &[]));
    assert_eq!(status, 101, "no origin: {head}");

    // Through a local proxy the loopback name proves nothing.
    for fwd in [
        ("X-Forwarded-For", "203.0.113.9"),
        ("Forwarded", "for=203.0.113.9"),
        ("X-Forwarded-Host", "evil.example"),
    ] {
        let (status, _, _) = http(&addr, "/", &[("Host", &addr), fwd]);
        assert_eq!(status, 403, "proxied with {fwd:?}");
    }
    let (status, _, _) = http(
        &addr,
        "/",
        &[("Host", "warren.example"), ("X-Forwarded-Host", "warren.example")],
    );
    assert_eq!(status, 200, "the configured name through a proxy");

    // Probes name the node any way they like.
    let (status, _, body) = http(&addr, "/healthz", &[("Host", "10.9.8.7")]);
    assert_eq!((status, body.trim()), (200, "ok"));
}

async fn anonymous(node: &TestNode) -> Client {
    Client::connect(&Target {
        url: node.target().url,
        token: None,
    })
    .await
    .expect("connect without a token")
}

async fn rpc(c: &mut Client, method: &str, params: Value) -> Result<Value, console_api::RpcError> {
    match c.call(method, params).await {
        Ok(v) => Ok(v),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("{method}: transport error {e}"),
    }
}

/// `warren console pair ARGS --json` on the node's data dir.
fn pair_code(node: &TestNode, args: &[&str]) -> Value {
    let mut all = vec!["console", "pair", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = warren(&all, &node.path());
    assert_eq!(code, 0, "warren console pair: {err}");
    serde_json::from_str(&out).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pairing_code_is_a_token_once_and_a_companion_only_reads() {
    let node = TestNode::start_logging_debug("local", "");
    let mut admin = node.client().await;
    let conv = agent_with_conversation(&mut admin, "alice").await;

    // The human form: URL, code and a QR code.
    let (code, out, err) = warren(&["console", "pair"], &node.path());
    assert_eq!(code, 0, "{err}");
    let console_url = format!("http://{}/", authority(&node));
    assert!(out.contains(&format!("console: {console_url}")), "{out}");
    assert!(out.contains('█') || out.contains('▀'), "no QR code in:\n{out}");

    // A code works once, without any token.
    let p = pair_code(&node, &[]);
    assert_eq!(p["url"], console_url.as_str());
    assert_eq!(p["profile"], "console");
    let mut anon = anonymous(&node).await;
    let e = rpc(&mut anon, "agent.list", json!({})).await.expect_err("no token yet");
    assert_eq!(e.code, -32001);
    let paired = rpc(&mut anon, "session.pair", json!({ "code": p["code"] }))
        .await
        .expect("pair");
    let token = paired["token"].as_str().expect("token").to_string();
    let e = rpc(&mut anon, "session.pair", json!({ "code": p["code"] }))
        .await
        .expect_err("a code is single use");
    assert_eq!(e.code, -32001, "{}", e.message);
    assert!(e.message.contains("once"), "{}", e.message);
    let e = rpc(&mut anon, "session.pair", json!({ "code": "0000-0000" }))
        .await
        .expect_err("a made-up code");
    assert_eq!(e.code, -32001);
    let mut full = anonymous(&node).await;
    rpc(&mut full, "session.authenticate", json!({ "token": token }))
        .await
        .expect("the paired token signs in");
    rpc(&mut full, "agent.create", json!({ "name": "bob", "harness": "fake" }))
        .await
        .expect("the console may create agents");
    // Issuing codes is the local admin's alone, even with an admin token.
    let e = rpc(&mut full, "session.pair_code", json!({}))
        .await
        .expect_err("remote");
    assert_eq!(e.code, -32010, "{}", e.message);

    // A companion reads, and the server refuses its writes.
    let p = pair_code(&node, &["--companion"]);
    assert_eq!(p["profile"], "companion");
    // (A connection with no token lives only seconds: a fresh one pairs.)
    let mut anon = anonymous(&node).await;
    let paired = rpc(&mut anon, "session.pair", json!({ "code": p["code"] }))
        .await
        .expect("pair a companion");
    let mut phone = anonymous(&node).await;
    rpc(&mut phone, "session.authenticate", json!({ "token": paired["token"] }))
        .await
        .expect("sign in");
    for (method, params) in [
        ("agent.list", json!({})),
        ("fleet.nodes", json!({})),
        ("conversation.screen", json!({ "conversation": conv })),
        ("transcript.read", json!({ "conversation": conv })),
        ("supervision.holds", json!({})),
    ] {
        rpc(&mut phone, method, params)
            .await
            .unwrap_or_else(|e| panic!("the companion reads {method}: {e}"));
    }
    for (method, params) in [
        ("agent.create", json!({ "name": "mallory", "harness": "fake" })),
        (
            "conversation.sendMessage",
            json!({ "conversation": conv, "text": "hi" }),
        ),
        ("conversation.pause", json!({ "conversation": conv })),
        ("conversation.terminate", json!({ "conversation": conv })),
        ("supervision.answer", json!({ "hold": "h", "decision": "approve" })),
        ("monitor.rearm", json!({ "attachment": "a" })),
    ] {
        let e = rpc(&mut phone, method, params).await.expect_err(method);
        assert_eq!(e.code, -32003, "companion {method}: {}", e.message);
    }
    let still = call(&mut admin, "conversation.get", json!({ "conversation": conv })).await;
    assert_eq!(
        still["conversation"]["state"], "active",
        "nothing the companion sent landed"
    );
    // Live updates are reads: the companion follows the node's events.
    rpc(
        &mut phone,
        "events.subscribe",
        json!({ "kinds": ["event.mail.arrived"] }),
    )
    .await
    .expect("the companion follows events");
    call(
        &mut admin,
        "agent.create",
        json!({ "name": "pen", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
    call(
        &mut admin,
        "mailbox.send",
        json!({ "from": "pen", "to": "pen", "body": "note to self" }),
    )
    .await;
    let note = phone
        .next_notification(std::time::Duration::from_secs(10))
        .await
        .expect("notification")
        .expect("event.mail.arrived");
    assert_eq!(note.method, "event.mail.arrived");
    assert_eq!(note.params["event"]["agent"], "pen");

    // --with-actions adds the allowlisted actions only.
    let p = pair_code(&node, &["--companion", "--with-actions"]);
    assert_eq!(p["profile"], "companion_actions");
    let mut anon = anonymous(&node).await;
    let paired = rpc(&mut anon, "session.pair", json!({ "code": p["code"] }))
        .await
        .expect("pair");
    let mut phone = anonymous(&node).await;
    rpc(&mut phone, "session.authenticate", json!({ "token": paired["token"] }))
        .await
        .expect("sign in");
    let e = rpc(
        &mut phone,
        "supervision.answer",
        json!({ "hold": "h-none", "decision": "approve" }),
    )
    .await
    .expect_err("no such hold");
    assert_eq!(e.code, -32004, "authorized, then not found: {}", e.message);
    let e = rpc(&mut phone, "conversation.pause", json!({ "conversation": conv }))
        .await
        .expect_err("still no writes");
    assert_eq!(e.code, -32003);

    // No token or code reached the node's log.
    let log = node.log_at_debug();
    assert!(!log.contains(&token), "a token in the log");
    assert!(!log.contains(p["code"].as_str().expect("code")), "a code in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_node_speaks_wss_with_its_self_signed_certificate() {
    let node = TestNode::start_with_config("[tls]\nself_signed = true\n");
    let target = node.target();
    assert!(target.url.starts_with("wss://"), "the endpoint is wss: {}", target.url);
    let cert = node.path().join("tls/cert.pem");
    let pem = std::fs::read_to_string(&cert).expect("the certificate is kept in the data dir");
    assert!(pem.contains("BEGIN CERTIFICATE"));

    // A client that trusts the certificate gets in; one that does not, not.
    let mut c = Client::connect_trusting(&target, std::slice::from_ref(&cert))
        .await
        .expect("wss with the node's certificate");
    let info = call(&mut c, "node.info", json!({})).await;
    assert!(
        info["endpoint"].as_str().is_some_and(|e| e.starts_with("wss://")),
        "{info}"
    );
    let refused = Client::connect(&target)
        .await
        .err()
        .expect("an unknown certificate is refused");
    assert!(
        format!("{refused:#}").to_lowercase().contains("certificate"),
        "{refused:#}"
    );
    // Plain ws:// to the TLS port is no WebSocket.
    let plain = Target {
        url: target.url.replacen("wss://", "ws://", 1),
        token: target.token.clone(),
    };
    assert!(Client::connect(&plain).await.is_err(), "plain text to a TLS port");

    // The CLI trusts its local node's certificate by itself.
    let (code, out, err) = warren(&["node", "info", "--json"], &node.path());
    assert_eq!(code, 0, "warren node info over wss: {err}");
    assert!(out.contains("wss://"), "{out}");
    // And a console link names https.
    let p = pair_code(&node, &[]);
    assert!(p["url"].as_str().is_some_and(|u| u.starts_with("https://")), "{p}");

    // A conversation's own tools reach the node over wss too: the node puts
    // its certificate beside the instance token.
    call(
        &mut c,
        "agent.create",
        json!({ "name": "a", "harness": "fake", "grants": { "peers": ["t"] } }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "t", "harness": "fake", "grants": { "tools": ["mail"] },
                "rules": [{ "match": "^check mail", "actions": [{ "shell": "warren-mail inbox 2>&1" }] }] }),
    )
    .await;
    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "a", "to": "t", "body": "sent over tls" }),
    )
    .await;
    let id = start_idle(&mut c, "t").await["id"].as_str().expect("id").to_string();
    send(&mut c, &id, "check mail").await;
    let line = wait_until("the tool's output", Duration::from_secs(30), || {
        let target = target.clone();
        let cert = cert.clone();
        let id = id.clone();
        async move {
            let mut c = Client::connect_trusting(&target, &[cert]).await.ok()?;
            transcript(&mut c, &id).await.into_iter().find(|e| {
                e["speaker"] == "tool"
                    && e["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("warren-mail") || t.contains("sent over tls"))
            })
        }
    })
    .await;
    assert!(
        line["text"]
            .as_str()
            .is_some_and(|t| t.contains("a -> t: sent over tls")),
        "warren-mail inbox over wss: {line}"
    );
}

/// `conversation.screen {cells: true}`: the fake CLI's red banner star is an
/// SGR red run, the cells' cursor is the screen's, the answer without
/// `cells` is unchanged; and a held Bash dialog carries its command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_screen_as_styled_cells_and_a_hold_with_its_command() {
    let node = TestNode::start();
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "cells").await;
    let plain = call(&mut c, "conversation.screen", json!({ "conversation": id })).await;
    assert!(plain.get("cells").is_none(), "cells only when asked: {plain}");
    let s = call(
        &mut c,
        "conversation.screen",
        json!({ "conversation": id, "cells": true }),
    )
    .await;
    let cells = &s["cells"];
    let rows = cells["rows"].as_array().expect("rows");
    assert_eq!(
        rows.len() as u64,
        s["rows"].as_u64().expect("rows"),
        "one entry per screen row"
    );
    assert_eq!(rows[0][0], json!({ "text": "✻", "width": 1, "fg": 1 }), "{s}");
    assert_eq!(rows[0][2]["text"], "Welcome to Fake Code!");
    assert_eq!(rows[0][2]["bold"], true);
    assert_eq!(
        (&cells["cursor"]["row"], &cells["cursor"]["col"]),
        (&s["cursor"][0], &s["cursor"][1]),
        "{s}"
    );
    // Each row's runs are its line's text (trailing blanks left out).
    for (i, row) in rows.iter().enumerate() {
        let text: String = row
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| r["text"].as_str())
            .collect();
        assert_eq!(text, s["lines"][i].as_str().expect("line").trim_end(), "row {i}");
    }
    let e = call_err(
        &mut c,
        "conversation.screen",
        json!({ "conversation": id, "cell": true }),
    )
    .await;
    assert_eq!(e.code, -32602, "{e:?}");

    send(&mut c, &id, "/fake tool bash git push --force").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let hold = loop {
        let h = call(&mut c, "supervision.holds", json!({})).await;
        if let Some(first) = h["holds"].as_array().and_then(|a| a.first()).cloned() {
            break first;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for the hold");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(hold["command"], "git push --force", "{hold}");
    assert!(
        hold["detail"].as_str().unwrap_or_default().contains("Bash command"),
        "{hold}"
    );
    assert_eq!(hold["detail_truncated"], false);
}

/// The node's end of the TCP connection whose other end is `ours`, as a
/// descriptor of this process (the node is our child and we may trace it:
/// `pidfd_getfd`), once the node has accepted it.
fn node_end_of(pid: u32, ours: std::net::SocketAddr) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let std::net::SocketAddr::V4(v4) = ours else {
        panic!("an IPv4 connection: {ours}")
    };
    let remote = format!("{:08X}:{:04X}", u32::from_le_bytes(v4.ip().octets()), v4.port());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let fd = loop {
        let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).expect("the node's TCP table");
        let inode = table.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&remote.as_str())).then(|| f[9].to_string())
        });
        let found = inode.and_then(|inode| {
            let want = format!("socket:[{inode}]");
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .expect("the node's descriptors")
                .flatten()
                .find(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == want))
                .and_then(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        });
        if let Some(fd) = found {
            break fd;
        }
        assert!(std::time::Instant::now() < deadline, "the node never accepted {ours}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: plain syscalls on descriptors this function owns and closes.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) as i32;
        assert!(pidfd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
        let pidfd = std::os::fd::OwnedFd::from_raw_fd(pidfd);
        let copy = libc::syscall(libc::SYS_pidfd_getfd, std::os::fd::AsRawFd::as_raw_fd(&pidfd), fd, 0) as i32;
        assert!(copy >= 0, "pidfd_getfd: {}", std::io::Error::last_os_error());
        std::os::fd::OwnedFd::from_raw_fd(copy)
    }
}

/// Whether TCP_NODELAY is set on `socket`.
fn no_delay_on(socket: &std::os::fd::OwnedFd) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a c_int of the given length.
    let rc = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(socket),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw mut on).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "getsockopt: {}", std::io::Error::last_os_error());
    on != 0
}

/// A keystroke's echo is a small frame: the node sends it at once rather
/// than waiting for the client's delayed ACK (~40 ms on every key), on the
/// plain and the TLS listener alike. (The browser tier reports the echo
/// latency this buys; this is the assertion.)
#[test]
fn the_nodes_api_connections_send_small_frames_at_once() {
    for config in ["", "[tls]\nself_signed = true\n"] {
        let node = TestNode::start_with_config(config);
        let url = node.target().url;
        let authority = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .expect("authority");
        let ours = TcpStream::connect(authority).expect("connect");
        let pid = node.proc.as_ref().expect("running").child.id();
        let theirs = node_end_of(pid, ours.local_addr().expect("our address"));
        assert!(no_delay_on(&theirs), "TCP_NODELAY on the node's end ({url})");
        // And the check can tell: our own end was left as it comes.
        let ours = std::os::fd::OwnedFd::from(ours);
        assert!(!no_delay_on(&ours), "a socket without TCP_NODELAY reads as such");
    }
}
