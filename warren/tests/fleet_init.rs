//! `warren fleet init` on a running node founds the fleet at once, no
//! restart (like `docker swarm init` on a running daemon): `fleet invite`
//! works straight after, `node.info` shows the fleet, a second real node
//! joins with the code, and the owner key is in the data dir so a restart
//! keeps the fleet. Init is refused on a node in a fleet already, with a key
//! that differs from the node's, over the network; with no node running it
//! only writes the key file, and says so.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use warren::client::CallError;

const FLEET: &str = "[fleet]\nlisten = \"/ip4/127.0.0.1/tcp/0\"\nheartbeat_ms = 300\nunhealthy_after_ms = 2500\n";

fn node(name: &str) -> TestNode {
    TestNode::start_with_config(&format!("name = \"{name}\"\n{FLEET}"))
}

async fn fleet_of(n: &TestNode) -> Value {
    call(&mut n.client().await, "node.info", json!({})).await["fleet"].clone()
}

/// `warren --json fleet init ARGS` against `dir`: its exit code and JSON.
fn init_json(args: &[&str], dir: &std::path::Path) -> (i32, Value, String) {
    let mut all = vec!["--json", "fleet", "init"];
    all.extend_from_slice(args);
    let (code, out, err) = warren(&all, dir);
    let v = serde_json::from_str(&out).unwrap_or_else(|_| panic!("json from fleet init: {out:?} {err}"));
    (code, v, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_init_on_a_running_node_founds_the_fleet_at_once() {
    let mut a = node("node-a");
    let b = node("node-b");
    assert_eq!(fleet_of(&a).await, Value::Null, "no fleet before init");
    assert!(!a.path().join("owner.key").exists());

    let (code, out, err) = warren(&["fleet", "init"], &a.path());
    assert_eq!(code, 0, "fleet init: {err}");
    assert!(out.contains("founded on the running node"), "{out}");
    let key = a.path().join("owner.key");
    assert!(
        out.contains(&format!("owner key written to {}", key.display())),
        "{out}"
    );
    assert_eq!(
        std::fs::metadata(&key).expect("owner.key").permissions().mode() & 0o777,
        0o600
    );

    // At once, no restart: node.info names the fleet, invite prints a code.
    let fleet = fleet_of(&a).await;
    let fleet_id = fleet.as_str().expect("node.info names the fleet").to_string();
    assert!(out.contains(&fleet_id), "the output names the fleet: {out}");
    let (code, invite, err) = warren(&["fleet", "invite"], &a.path());
    assert_eq!(code, 0, "fleet invite right after init: {err}");
    assert!(invite.trim().starts_with("wfj1."), "{invite}");

    // A second real node joins with it.
    let (code, out, err) = warren(&["fleet", "join", invite.trim()], &b.path());
    assert_eq!(code, 0, "fleet join: {err}");
    assert!(out.contains(&fleet_id), "{out}");
    assert_eq!(fleet_of(&b).await, json!(fleet_id));
    let mut api = a.client().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = call(&mut api, "fleet.nodes", json!({})).await;
        let healthy = v["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .filter(|n| n["healthy"] == true)
            .count();
        if healthy == 2 {
            assert_eq!(v["fleet_id"], json!(fleet_id));
            break;
        }
        assert!(Instant::now() < deadline, "both nodes healthy in node-a's view: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Init again, on the founder or on the member: refused, naming the fleet.
    for (n, who) in [(&a, "founder"), (&b, "member")] {
        let (code, out, err) = warren(&["fleet", "init"], &n.path());
        assert_eq!(code, 1, "init on the {who}: {out}");
        assert!(
            err.contains("-32009") && err.contains(&format!("this node is in fleet {fleet_id} already")),
            "init on the {who}: {err}"
        );
    }
    assert!(!b.path().join("owner.key").exists(), "a refused init writes no key");

    // The key is in the data dir: after a restart the node is still the owner.
    a.kill9();
    a.restart();
    assert_eq!(fleet_of(&a).await, json!(fleet_id));
    let (code, _, err) = warren(&["fleet", "invite"], &a.path());
    assert_eq!(code, 0, "invite after a restart: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_init_uses_or_refuses_the_key_it_is_given() {
    let keys = tempfile::tempdir().expect("key dir");
    // No node running there: the key file only, and the output says so.
    let mine = keys.path().join("mine.key");
    let (code, offline, err) = init_json(&["--key-file", &mine.display().to_string()], keys.path());
    assert_eq!(code, 0, "offline init: {err}");
    assert_eq!(offline["running_node"], false, "{offline}");
    let (code, out, _) = warren(
        &[
            "fleet",
            "init",
            "--key-file",
            &keys.path().join("other.key").display().to_string(),
        ],
        keys.path(),
    );
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("no node is running at {}", keys.path().display())),
        "{out}"
    );

    let a = node("node-a");
    // Over the network, even with the admin token: local only.
    match a.client().await.call("fleet.init", json!({})).await {
        Err(CallError::Rpc(e)) => assert_eq!(e.code, -32010, "{}", e.message),
        other => panic!("fleet.init over the network: {other:?}"),
    }
    // Not a key: refused, naming the parameter.
    let e = warren::client::unix_call(&a.path(), "fleet.init", json!({ "owner_key": "abc" }))
        .await
        .expect_err("not a key");
    let CallError::Rpc(e) = e else { panic!("{e}") };
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("owner_key"), "{}", e.message);

    // The node's data dir has a key already (put there while it ran): a
    // different given key is refused, and nothing is founded.
    std::fs::copy(keys.path().join("other.key"), a.path().join("owner.key")).expect("copy key");
    let (code, out, err) = warren(&["fleet", "init", "--key-file", &mine.display().to_string()], &a.path());
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("-32009") && err.contains("differs"), "{err}");
    assert_eq!(fleet_of(&a).await, Value::Null);

    // The same key is taken: the node founds the fleet with the key on disk.
    let other = keys.path().join("other.key").display().to_string();
    let (code, v, err) = init_json(&["--key-file", &other], &a.path());
    assert_eq!(code, 0, "init with the node's own key: {err}");
    assert_eq!(v["running_node"], true);
    assert_eq!(v["wrote_owner_key"], false);
    assert_eq!(v["members"], 1);
    let on_disk = std::fs::read_to_string(a.path().join("owner.key")).expect("key");
    let root = capabilities::RootKey::from_private_hex(on_disk.trim()).expect("a key");
    assert_eq!(v["public_key"], json!(root.public_hex()));
    assert_eq!(fleet_of(&a).await, v["fleet_id"]);

    // A key file that does not exist yet: made here, given to a fresh node,
    // and written once the node took it.
    let c = node("node-c");
    let fresh = keys.path().join("fresh.key");
    let (code, v, err) = init_json(&["--key-file", &fresh.display().to_string()], &c.path());
    assert_eq!(code, 0, "init with a new key file: {err}");
    assert_eq!(v["wrote_owner_key"], true);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).expect("key").trim().to_lowercase();
    assert_eq!(read(&fresh), read(&c.path().join("owner.key")));
    assert_eq!(
        std::fs::metadata(&fresh).expect("fresh").permissions().mode() & 0o777,
        0o600
    );

    // A node configured with `[fleet] owner_key` founds at start-up, as
    // before; init there is refused, as on any member.
    let d = TestNode::start_with_config(&format!(
        "name = \"node-d\"\n{FLEET}owner_key = {:?}\n",
        fresh.display().to_string()
    ));
    assert_eq!(fleet_of(&d).await, v["fleet_id"], "the same key, the same fleet");
    let (code, _, err) = warren(&["fleet", "init"], &d.path());
    assert_eq!(code, 1);
    assert!(err.contains("already"), "{err}");
}
