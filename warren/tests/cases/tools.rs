// Tool and mailbox-delivery cases shared by the local (tests/tools.rs) and
// Docker (tests/docker_durable_home.rs) runtimes: `RUNTIME` is defined by the
// file that includes this one.

/// The owner's secret, in the node's environment only.
const VAULT_SECRET: &str = "vault-key-7f3a9c1e5b2d4068aa";

/// Every file under `dir` whose bytes contain `needle` (the guest's whole
/// writable filesystem is the agent's home and workspace).
fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file()
                && std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                out.push(p);
            }
        }
    }
    out
}

/// A node on RUNTIME with the owner tool `vault`: a script on the node's host
/// that only works with the secret it takes from the node's environment
/// (it holds only the secret's hash).
fn node_with_vault() -> TestNode {
    let mut node = TestNode::start_logging_debug(RUNTIME, "");
    let hash = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{VAULT_SECRET}' | sha256sum | cut -c1-64")])
        .output()
        .expect("sha256sum");
    let hash = String::from_utf8_lossy(&hash.stdout).trim().to_string();
    let script = node.path().join("vault.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$(printf %s \"$WARREN_TEST_VAULT_KEY\" | sha256sum | cut -c1-64)\" = \"{hash}\" ]; then\n  printf 'vault opened for'; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo\nelse\n  echo 'vault: wrong key' >&2; exit 3\nfi\n"
        ),
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let toml_path = node.path().join("warren.toml");
    let mut toml = std::fs::read_to_string(&toml_path).unwrap_or_default();
    toml.push_str(&format!(
        "\n[tools.vault]\nargv = [\"{}\", \"{{args}}\"]\nenv = [\"WARREN_TEST_VAULT_KEY\"]\ntimeout_secs = 10\ndescription = \"opens the owner's vault\"\n",
        script.display()
    ));
    std::fs::write(&toml_path, toml).expect("config");
    node.restart_with_env(&[("WARREN_TEST_VAULT_KEY", VAULT_SECRET)]);
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mounted_tools_are_the_grant_and_an_owner_secret_never_reaches_the_guest() {
    let node = node_with_vault();
    let mut c = node.client().await;
    let probe = "warren-mail inbox; command -v warren > which.out; echo $? > which.code; \
                 ls \"$(dirname \"$(command -v warren-mail)\")\" > tools.ls; env > env.out; \
                 warren-recall search x > recall.out 2>&1; echo $? > recall.code; \
                 warren-vault 'open; touch pwned' '$(id)' '`id`' > vault.out 2>&1; echo $? > vault.code";
    call(
        &mut c,
        "agent.create",
        json!({ "name": "a", "harness": "fake", "grants": { "peers": ["b"], "tools": ["mail"] } }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "b", "harness": "fake", "grants": { "tools": ["mail", "vault"] },
                "rules": [{ "match": "WARREN MAIL", "actions": [{ "shell": probe }] }] }),
    )
    .await;
    call(&mut c, "agent.create", json!({ "name": "c", "harness": "fake" })).await;
    let e = call_err(
        &mut c,
        "agent.create",
        json!({ "name": "d", "harness": "fake", "grants": { "tools": ["valut"] } }),
    )
    .await;
    assert!(e.message.contains("valut") && e.message.contains("vault"), "{}", e.message);

    // a mails b while b has no conversation; the directions are per pair.
    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "a", "to": "b", "body": "the deploy window is 14:00 UTC" }),
    )
    .await;
    assert_eq!(
        call_err(&mut c, "mailbox.send", json!({ "from": "a", "to": "c", "body": "hi" })).await.code,
        -32003
    );
    assert_eq!(
        call_err(&mut c, "mailbox.send", json!({ "from": "b", "to": "a", "body": "hi" })).await.code,
        -32003,
        "b was granted no peers"
    );

    // b's next conversation surfaces the backlog once idle (b is not
    // supervised: as the full body); its rule reads the inbox with the
    // granted tool, whose output is the tool output.
    let id = start_idle(&mut c, "b").await["id"].as_str().expect("id").to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let tool_line = loop {
        let found = transcript(&mut c, &id).await.into_iter().find(|e| {
            e["speaker"] == "tool" && e["text"].as_str().is_some_and(|t| t.contains("the deploy window is 14:00 UTC"))
        });
        if let Some(e) = found {
            break e;
        }
        assert!(std::time::Instant::now() < deadline, "warren-mail inbox never ran in the conversation: {:#?}", transcript(&mut c, &id).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(tool_line["text"].as_str().is_some_and(|t| t.contains("a -> b: the deploy window")), "{tool_line}");
    let ws = node.path().join("agents/b/workspace");
    let code = wait_until("the probe finished", Duration::from_secs(30), || {
        let p = ws.join("vault.code");
        async move { std::fs::read_to_string(p).ok().filter(|s| !s.trim().is_empty()) }
    })
    .await;
    let read = |f: &str| std::fs::read_to_string(ws.join(f)).unwrap_or_default();
    assert_ne!(read("which.code").trim(), "0", "no warren client on the PATH: {}", read("which.out"));
    assert_eq!(read("tools.ls").lines().collect::<Vec<_>>(), ["warren-mail", "warren-vault"]);
    assert_eq!(read("recall.code").trim(), "127", "recall was not granted: {}", read("recall.out"));
    // The owner tool worked, with its arguments passed literally.
    assert_eq!(code.trim(), "0", "{}", read("vault.out"));
    assert_eq!(read("vault.out").trim(), "vault opened for [open; touch pwned] [$(id)] [`id`]");
    assert!(!ws.join("pwned").exists() && !node.path().join("pwned").exists());
    // The secret is in neither the guest's environment, its filesystem, the
    // transcript nor the node's log.
    assert!(!read("env.out").contains(VAULT_SECRET));
    assert!(read("env.out").contains("WARREN_TOKEN_FILE"), "the probe saw the CLI's environment");
    let agent_dir = node.path().join("agents/b");
    assert_eq!(files_containing(&agent_dir, VAULT_SECRET.as_bytes()), Vec::<std::path::PathBuf>::new());
    let all = call(&mut c, "transcript.read", json!({ "conversation": id, "limit": 1000 })).await;
    assert!(!all.to_string().contains(VAULT_SECRET));
    assert!(!node.log_at_debug().contains(VAULT_SECRET), "the node's log");
    // The owner reads who ran what (never the output).
    let entries = call(&mut c, "tool.log", json!({})).await["entries"].clone();
    let e = &entries[0];
    assert_eq!((e["tool"].as_str(), e["agent"].as_str(), e["exit_code"].as_i64()), (Some("vault"), Some("b"), Some(0)));
    assert_eq!(e["conversation"], id);
    assert!(!entries.to_string().contains("vault opened"));

    // A withdrawn grant is refused at once (the conversation's token still
    // lists it until the next launch).
    let token = instance_token(&node, RUNTIME, "b", &id);
    let mut t = client_with(&node, &token).await;
    let ok = call(&mut t, "tool.invoke", json!({ "tool": "vault", "args": ["x"] })).await;
    assert_eq!(ok["exit_code"], 0);
    call(&mut c, "agent.update", json!({ "agent": "b", "grants": { "tools": ["mail"] } })).await;
    let e = call_err(&mut t, "tool.invoke", json!({ "tool": "vault", "args": ["x"] })).await;
    assert_eq!(e.code, -32003, "{}", e.message);
    // Its own inbox only.
    let e = call_err(&mut t, "mailbox.inbox", json!({ "agent": "a" })).await;
    assert_eq!(e.code, -32003, "{}", e.message);

    // Revoking a's may-message makes its next send fail.
    call(&mut c, "agent.update", json!({ "agent": "a", "grants": { "peers": [], "tools": ["mail"] } })).await;
    let e = call_err(&mut c, "mailbox.send", json!({ "from": "a", "to": "b", "body": "again" })).await;
    assert_eq!(e.code, -32003, "{}", e.message);
}
