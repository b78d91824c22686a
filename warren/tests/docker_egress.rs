//! Egress on a real Docker engine: a guest has no network but its two
//! sockets, so without a grant it reaches neither a server on the host
//! (directly or through its proxy), nor a private address, nor another
//! guest, nor any name (no DNS); a grant of `host:port` opens exactly that
//! port, at once on a live conversation; every refusal is in
//! `egress.audit`; and the instance token is on no bind mount. Needs a
//! Docker engine: without one these fail.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// A TCP server on every interface of the host that greets and hangs up.
async fn greeter() -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = s.write_all(format!("greetings-from-{port}\n").as_bytes()).await;
            });
        }
    });
    port
}

/// The fake CLI's rules: `probe HOST PORT` asks the guest's proxy for a
/// tunnel and prints what comes back; `direct HOST PORT` opens a TCP
/// connection itself; `dns NAME` looks a name up.
fn rules() -> Value {
    json!([
        { "match": "^probe (\\S+) (\\S+)$", "actions": [{ "shell":
            "bash -c 'p=${HTTPS_PROXY##*:}; exec 3<>/dev/tcp/127.0.0.1/$p || exit 9; printf \"CONNECT {{1}}:{{2}} HTTP/1.1\\r\\n\\r\\n\" >&3; echo probe-{{1}}-{{2}}: $(timeout 5 head -c 300 <&3 | tr -d \"\\r\" | tr \"\\n\" \" \")'" }] },
        { "match": "^direct (\\S+) (\\S+)$", "actions": [{ "shell":
            "timeout 5 bash -c 'exec 3<>/dev/tcp/{{1}}/{{2}}' 2>/dev/null; echo direct-{{1}}-{{2}}: rc=$?" }] },
        { "match": "^dns (\\S+)$", "actions": [{ "shell":
            "getent hosts {{1}} >/dev/null 2>&1; echo dns-{{1}}: rc=$?" }] },
    ])
}

/// Runs `command` through the fake CLI; returns the first transcript line
/// after it that contains `marker`.
async fn run(c: &mut warren::client::Client, id: &str, command: &str, marker: &str) -> String {
    let after = transcript(c, id)
        .await
        .last()
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or(0);
    send(c, id, command).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = transcript(c, id).await.into_iter().find_map(|e| {
            let text = e["text"].as_str()?;
            (e["seq"].as_u64()? > after && e["speaker"] != "user" && text.contains(marker)).then(|| text.to_string())
        });
        if let Some(line) = found {
            return line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {marker:?} after {command:?} in {id}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One of the host's own addresses (not loopback): where a container on a
/// network would reach a server of the host.
fn host_address() -> String {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .expect("hostname -I");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let first = text
        .split_whitespace()
        .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok());
    first.expect("the host has an IPv4 address").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_reaches_exactly_what_it_is_granted() {
    let open = greeter().await;
    let next = open + 1;
    // The next port is someone else's server too: refused all the same.
    let _other = tokio::net::TcpListener::bind(("0.0.0.0", next)).await;
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "closed", "harness": "fake", "rules": rules() }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "granted", "harness": "fake", "rules": rules(),
                "grants": { "egress": [format!("host.docker.internal:{open}")] } }),
    )
    .await;
    let closed = conversation_id(&mut c, "closed").await;
    let granted = conversation_id(&mut c, "granted").await;

    // No network at all: only loopback, no address another guest could use.
    for id in [&closed, &granted] {
        let ct = inspect(id);
        assert_eq!(ct["HostConfig"]["NetworkMode"], "none", "{id}");
        let nets = ct["NetworkSettings"]["Networks"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            nets.values().all(|n| n["IPAddress"].as_str().unwrap_or("").is_empty()),
            "a guest has no address: {nets:?}"
        );
    }

    // Without a grant: the host server, directly or through the proxy; a
    // private address; a public one; any name.
    let gw = host_address();
    let line = run(
        &mut c,
        &closed,
        &format!("direct {gw} {open}"),
        &format!("direct-{gw}-{open}"),
    )
    .await;
    assert!(!line.contains("rc=0"), "no route to the host: {line}");
    let line = run(&mut c, &closed, "direct 1.1.1.1 443", "direct-1.1.1.1-443").await;
    assert!(!line.contains("rc=0"), "no route out: {line}");
    // Nor the other guest, by its container's name (it has no address).
    let sibling = format!("warren-{}-{granted}", node.node_id());
    for (host, port) in [
        (sibling, 80),
        ("host.docker.internal".to_string(), open),
        ("10.0.0.1".to_string(), 80),
        (gw.clone(), open),
        ("example.com".to_string(), 443),
    ] {
        let marker = format!("probe-{host}-{port}");
        let line = run(&mut c, &closed, &format!("probe {host} {port}"), &marker).await;
        assert!(line.contains("403"), "{host}:{port} is refused: {line}");
        assert!(line.contains("not granted"), "{line}");
    }
    let line = run(&mut c, &closed, "dns example.com", "dns-example.com").await;
    assert!(!line.contains("rc=0"), "no name resolves: {line}");
    let line = run(&mut c, &closed, "dns host.docker.internal", "dns-host.docker.internal").await;
    assert!(!line.contains("rc=0"), "not even the host's: {line}");

    // Granted host:port: exactly that port.
    let line = run(
        &mut c,
        &granted,
        &format!("probe host.docker.internal {open}"),
        &format!("probe-host.docker.internal-{open}"),
    )
    .await;
    assert!(
        line.contains("200") && line.contains(&format!("greetings-from-{open}")),
        "{line}"
    );
    let line = run(
        &mut c,
        &granted,
        &format!("probe host.docker.internal {next}"),
        &format!("probe-host.docker.internal-{next}"),
    )
    .await;
    assert!(line.contains("403"), "the next port is refused: {line}");
    // The node answers the names a grant names, through the guest's resolver.
    let line = run(&mut c, &granted, "dns host.docker.internal", "dns-host.docker.internal").await;
    assert!(line.contains("rc=0"), "a granted name resolves: {line}");
    let line = run(&mut c, &granted, "dns example.com", "dns-example.com").await;
    assert!(!line.contains("rc=0"), "{line}");

    // A grant changed on the live conversation applies to its next connection.
    call(
        &mut c,
        "agent.update",
        json!({ "agent": "closed", "grants": { "egress": [format!("host.docker.internal:{open}")] } }),
    )
    .await;
    let line = run(
        &mut c,
        &closed,
        &format!("probe host.docker.internal {open}"),
        &format!("probe-host.docker.internal-{open}"),
    )
    .await;
    assert!(line.contains(&format!("greetings-from-{open}")), "{line}");
    assert!(line.contains("200"), "{line}");

    // Every refusal is recorded, with the rule; the CLI shows them.
    let audit = wait_until("the refusals are recorded", Duration::from_secs(10), || {
        let node_target = node.target();
        async move {
            let mut c = warren::client::Client::connect(&node_target).await.ok()?;
            let a = c.call("egress.audit", json!({ "agent": "closed" })).await.ok()?;
            let refused = a["entries"]
                .as_array()?
                .iter()
                .filter(|e| e["allowed"] == false)
                .count();
            (refused >= 4).then_some(a)
        }
    })
    .await;
    let entries = audit["entries"].as_array().expect("entries");
    assert!(
        entries
            .iter()
            .any(|e| e["dest"] == "10.0.0.1" && e["port"] == 80 && e["rule"] == "no grant"),
        "{audit}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["dest"] == "example.com" && e["port"] == 443 && e["allowed"] == false),
        "{audit}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["dest"] == "example.com" && e["port"] == 53 && e["rule"] == "lookup: no grant"),
        "a refused lookup is recorded: {audit}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["dest"] == "host.docker.internal" && e["allowed"] == true),
        "the allowed connection after the grant is sampled: {audit}"
    );
    assert_eq!(audit["egress"], json!([format!("host.docker.internal:{open}")]));
    let (code, out, err) = warren(&["egress", "audit", "closed"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("refused") && out.contains("10.0.0.1:80"), "{out}");
    let e = call_err(&mut c, "egress.audit", json!({ "agent": "closed", "limit": 0 })).await;
    assert!(e.message.contains("limit"), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instance_token_is_on_no_bind_mount() {
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "tok", "harness": "fake", "grants": { "tools": ["mail"] },
                "rules": [{ "match": "^inbox$", "actions": [{ "shell": "warren-mail inbox 2>&1; echo inbox-rc=$?" }] }] }),
    )
    .await;
    let id = conversation_id(&mut c, "tok").await;
    let ct = inspect(&id);
    let name = ct["Name"].as_str().expect("name").trim_start_matches('/').to_string();
    // The token is in the guest's memory, handed over its link.
    let file = env_of(&ct, "WARREN_TOKEN_FILE");
    assert!(file.starts_with("/run/warren-secrets/"), "{file}");
    assert!(
        !ct["Config"]["Env"].to_string().contains("WARREN_TOKEN="),
        "not in the container's environment"
    );
    let token = wait_until("the token in the guest", Duration::from_secs(15), || {
        let (ok, out, _) = docker_status(&["exec", &name, "cat", &file]);
        async move { (ok && out.len() > 20).then_some(out) }
    })
    .await;
    assert!(
        ct["HostConfig"]["Tmpfs"]["/run/warren-secrets"].is_string(),
        "{}",
        ct["HostConfig"]
    );
    // No bind mount holds it (or any file named like it).
    let mounts = ct["Mounts"].as_array().expect("mounts");
    assert!(!mounts.is_empty());
    for m in mounts.iter().filter(|m| m["Type"] == "bind") {
        let source = std::path::PathBuf::from(m["Source"].as_str().expect("source"));
        let mut stack = vec![source];
        while let Some(p) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                stack.extend(std::fs::read_dir(&p).into_iter().flatten().flatten().map(|e| e.path()));
            } else if meta.is_file() {
                assert_ne!(
                    p.file_name().and_then(|n| n.to_str()),
                    Some("instance.token"),
                    "{}",
                    p.display()
                );
                let body = std::fs::read(&p).unwrap_or_default();
                assert!(
                    !body.windows(token.len()).any(|w| w == token.as_bytes()),
                    "the token is in {}",
                    p.display()
                );
            }
        }
    }
    // And the tools still find it.
    let line = run(&mut c, &id, "inbox", "inbox-rc").await;
    assert!(line.contains("inbox-rc=0"), "the mail tool acts with the token: {line}");
}
