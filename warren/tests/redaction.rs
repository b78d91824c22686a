//! Known secret values are never stored or shown (issue 22): an agent's
//! secret, its live instance token and an owner tool's environment value,
//! printed by a CLI or typed into it, reach neither the transcript, the
//! terminal stream, the event log nor the recall index; readers (a companion
//! included) see `[redacted: NAME]`.

mod support;

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use support::*;

/// The agent's secret (an `agent secret` value).
const SECRET: &str = "sk-leaky-5f1e9a2c7b3d4e6f80a1";
/// An owner tool's environment value (the node's own environment).
const VAULT: &str = "vault-key-0c9d8e7f6a5b4c3d2e1f";

/// Every byte of the store (the database and its write-ahead log).
fn store_bytes(node: &TestNode) -> Vec<u8> {
    let mut all = std::fs::read(node.db()).expect("warren.db");
    if let Ok(wal) = std::fs::read(node.path().join("warren.db-wal")) {
        all.extend(wal);
    }
    all
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_a_cli_prints_are_redacted_wherever_they_would_be_kept_or_shown() {
    let mut node = TestNode::start();
    let config = node.path().join("warren.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap_or_default();
    toml.push_str("\n[tools.vault]\nargv = [\"/bin/true\"]\nenv = [\"WARREN_TEST_VAULT_KEY\"]\n");
    std::fs::write(&config, toml).expect("config");
    node.restart_with_env(&[("WARREN_TEST_VAULT_KEY", VAULT)]);
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "leaky", "harness": "fake",
                "rules": [{ "match": "^leak$", "actions": [{ "shell": "echo \"key=$LEAKY_KEY\"; echo \"token=$WARREN_TOKEN\"" }] }] }),
    )
    .await;
    warren::client::unix_call(
        &node.path(),
        "agent.secret.set",
        json!({ "agent": "leaky", "name": "LEAKY_KEY", "value": SECRET }),
    )
    .await
    .expect("set the secret");
    let id = conversation_id(&mut c, "leaky").await;
    let token = std::fs::read_to_string(node.path().join("agents/leaky/home/.warren/instance.token"))
        .expect("instance token")
        .trim()
        .to_string();

    let mut term = node.client().await;
    call(&mut term, "terminal.subscribe", json!({ "conversation": id })).await;
    send(&mut c, &id, "leak").await;
    send(&mut c, &id, &format!("the vault says {VAULT}")).await;
    wait_event(
        &mut c,
        &id,
        "agent",
        "echo: the vault says [redacted: WARREN_TEST_VAULT_KEY]",
    )
    .await;

    // The transcript: the tool's output and the human's words, redacted.
    let events = transcript(&mut c, &id).await;
    let texts: Vec<String> = events
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default().to_string())
        .collect();
    let all = texts.join("\n");
    for (name, value) in [
        ("LEAKY_KEY", SECRET),
        ("WARREN_TOKEN", token.as_str()),
        ("vault", VAULT),
    ] {
        assert!(!all.contains(value), "the {name} value is in the transcript:\n{all}");
    }
    let tool = texts
        .iter()
        .find(|t| t.contains("key="))
        .unwrap_or_else(|| panic!("no tool line in {texts:#?}"));
    assert!(tool.contains("key=[redacted: LEAKY_KEY]"), "{tool}");
    assert!(tool.contains("token=[redacted: WARREN_TOKEN]"), "{tool}");

    // The terminal stream: what a subscriber was sent.
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut stream = vec![];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !contains(&stream, "says [redacted: WARREN_TEST_VAULT_KEY]") {
        assert!(
            std::time::Instant::now() < deadline,
            "the terminal never showed the redacted line: {}",
            String::from_utf8_lossy(&stream)
        );
        let Some(n) = term.next_notification(Duration::from_secs(10)).await.expect("terminal") else {
            continue;
        };
        if let Some(d) = n.params["data"].as_str() {
            stream.extend(b64.decode(d).expect("base64"));
        }
    }
    assert!(
        contains(&stream, "key=[redacted: LEAKY_KEY]"),
        "{}",
        String::from_utf8_lossy(&stream)
    );
    for (name, value) in [
        ("LEAKY_KEY", SECRET),
        ("WARREN_TOKEN", token.as_str()),
        ("vault", VAULT),
    ] {
        assert!(
            !contains(&stream, value),
            "the {name} value reached a terminal subscriber"
        );
    }

    // A companion reads the redacted text.
    let companion = call(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "node", "operation": "observe" }],
                "methods": ["transcript.read", "conversation.get"], "ttl_secs": 600 }),
    )
    .await["token"]
        .as_str()
        .expect("token")
        .to_string();
    let mut phone = client_with(&node, &companion).await;
    let read = call(
        &mut phone,
        "transcript.read",
        json!({ "conversation": id, "limit": 1000 }),
    )
    .await;
    let seen = read.to_string();
    assert!(seen.contains("[redacted: LEAKY_KEY]"), "{seen}");
    assert!(!seen.contains(SECRET) && !seen.contains(&token) && !seen.contains(VAULT));

    // Recall finds the line, never the value.
    let hits = call(
        &mut c,
        "recall.search",
        json!({ "agent": "leaky", "query": "redacted" }),
    )
    .await;
    assert!(hits.to_string().contains("LEAKY_KEY"), "{hits}");
    let hits = call(&mut c, "recall.search", json!({ "agent": "leaky", "query": SECRET })).await;
    assert!(!hits.to_string().contains(SECRET), "{hits}");

    // The store's bytes (events, transcript, recall, the WAL) hold none of them.
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let bytes = store_bytes(&node);
    assert!(!bytes.is_empty());
    for (name, value) in [
        ("LEAKY_KEY", SECRET),
        ("WARREN_TOKEN", token.as_str()),
        ("vault", VAULT),
    ] {
        assert!(!contains(&bytes, value), "the {name} value is in the store file");
    }
    assert!(contains(&bytes, "[redacted: LEAKY_KEY]"));
    let _: Value = call(&mut c, "node.info", json!({})).await;
}
