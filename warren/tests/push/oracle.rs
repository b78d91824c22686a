//! The independent reading of a Web Push (`oracle.py`, run by the Python of
//! the project's py-libp2p venv, which brings `cryptography`): shared by the
//! node's push tests and the netlab's.

use std::path::PathBuf;

use fake_model::push::Pushed;
use serde_json::{Value, json};

/// The repository's root (the crate including this file is one level down).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The independent oracle's Python (the project's own py-libp2p venv).
pub(crate) fn python() -> PathBuf {
    let p = repo().join("target/tools/py-libp2p/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run deploy/scripts/fetch-py-libp2p.sh (it brings Python's cryptography)",
        p.display()
    );
    p
}

pub(crate) fn oracle(mode: &str, input: Option<&Value>) -> Value {
    use std::io::Write;
    let script = repo().join("warren/tests/push/oracle.py");
    let mut child = std::process::Command::new(python())
        .arg(script)
        .arg(mode)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oracle runs");
    if let Some(v) = input {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(v.to_string().as_bytes())
            .expect("write");
    }
    let out = child.wait_with_output().expect("oracle");
    assert!(
        out.status.success(),
        "oracle {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle json")
}

/// Decrypts and verifies `p` as the subscriber `keys` would.
pub(crate) fn open(p: &Pushed, keys: &Value) -> Value {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    oracle(
        "open",
        Some(&json!({
            "private": keys["private"], "p256dh": keys["p256dh"], "auth": keys["auth"],
            "body": b64.encode(&p.body),
            "authorization": p.header("authorization").expect("an Authorization header"),
        })),
    )
}

/// `push.subscribe`'s params for `endpoint` and the oracle's `keys`.
pub(crate) fn subscription(endpoint: &str, keys: &Value) -> Value {
    json!({ "endpoint": endpoint, "keys": { "p256dh": keys["p256dh"], "auth": keys["auth"] } })
}
