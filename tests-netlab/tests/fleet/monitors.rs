//! Monitors across members as seed 002 section 12 says: a breaker trip
//! leaves both conversations paused when the target is homed on another
//! member, and `warren monitor attach` without `--monitor` places the monitor
//! agent on the target's home.

use super::routed::count_events;
use super::*;

/// The state of `conversation` on `node`.
async fn conversation_state(node: &LabNode, conversation: &str) -> Option<String> {
    let v = node
        .call("conversation.get", json!({ "conversation": conversation }))
        .await
        .ok()?;
    v["conversation"]["state"].as_str().map(str::to_string)
}

/// A coder that answers every piece of advice with the keyword again: a
/// ping-pong the breaker has to stop.
fn looping_coder() -> Value {
    json!({ "name": "coder", "harness": "fake", "rules": [
        { "match": "Advice from monitor", "actions": [{ "say": "still a segfault" }] },
        { "match": "^crash", "actions": [{ "say": "segfault" }] }
    ] })
}

/// A monitor's fake CLI: it reads the trigger message and advises once.
fn advisor_rules() -> Value {
    json!([{ "match": "warren-read (c-[0-9a-f]+)", "actions": [{ "shell": "warren-advise {{1}} 'look at the pointer'" }] }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_pauses_both_conversations_when_the_target_is_on_another_member() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));
    n2.call("agent.create", looping_coder()).await.expect("coder on n2");
    n1.call(
        "agent.create",
        json!({ "name": "mon", "harness": "fake", "rules": advisor_rules() }),
    )
    .await
    .expect("mon on n1");
    let a = n1
        .call(
            "monitor.attach",
            json!({ "monitor": "mon", "target": { "agent": "coder@n2" },
                    "trigger": { "keywords": [{ "text": "segfault" }] }, "breaker": { "max_cycles": 1 } }),
        )
        .await
        .expect("attach across the fleet");
    let attachment = a["attachment"]["id"].as_str().expect("id").to_string();
    let conv = n2.idle_conversation("coder").await.expect("an idle conversation");
    n2.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "crash" }),
    )
    .await
    .expect("send");

    // The first advice completes the one allowed cycle: delivered, then the
    // breaker trips on n1.
    let tripped = wait_for("the breaker trips on n1", Duration::from_secs(60), || async {
        let l = n1.call("monitor.list", json!({})).await.ok()?;
        let mine = l["attachments"]
            .as_array()?
            .iter()
            .find(|x| x["id"] == attachment.as_str())?
            .clone();
        (mine["state"] == "tripped").then_some(mine)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n1:\n{}\n--- n2:\n{}", n1.log(), n2.log()));
    // The trip is decided on n1 as the advice goes out; the advice lands in
    // n2's transcript when the forwarded send completes.
    wait_for(
        "the tripping advice delivered on n2",
        Duration::from_secs(20),
        || async { (count_events(n2, &conv, "monitor:mon", "look at the pointer").await == 1).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n1:\n{}\n--- n2:\n{}", n1.log(), n2.log()));
    let mconv = tripped["monitor_conversations"][&conv]
        .as_str()
        .expect("the monitor's conversation")
        .to_string();

    // Both sides paused: the monitor's on n1, the target on its home n2.
    wait_for("both conversations paused", Duration::from_secs(20), || async {
        let target = conversation_state(n2, &conv).await?;
        let monitor = conversation_state(n1, &mconv).await?;
        (target == "paused" && monitor == "paused").then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n1:\n{}\n--- n2:\n{}", n1.log(), n2.log()));
    // Left paused and intact: nothing resumes them, no more advice comes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(conversation_state(n2, &conv).await.as_deref(), Some("paused"));
    assert_eq!(conversation_state(n1, &mconv).await.as_deref(), Some("paused"));
    assert_eq!(count_events(n2, &conv, "monitor:mon", "look at the pointer").await, 1);
    assert!(count_events(n2, &conv, "agent", "still a segfault").await <= 1);

    // The delegation n1 keeps names the pause among its methods, for coder
    // only; n2 trusts it.
    let file = n1.dir.join("monitors").join(format!("{attachment}.token"));
    let token = std::fs::read_to_string(&file).expect("the delegation");
    let seen = n2
        .call("token.inspect", json!({ "token": token.trim() }))
        .await
        .expect("inspect on n2");
    assert_eq!(seen["verified"], true, "{seen}");
    let blocks = seen["blocks"].to_string();
    assert!(
        blocks.contains("agent:coder") && blocks.contains("conversation.pause") && blocks.contains("control"),
        "{blocks}"
    );
    assert!(!blocks.contains("conversation.terminate"), "{blocks}");

    // A person on n3 re-arms it: the call names n1, which holds it.
    let owner = lab.owner_token(0, &["node:supervise"]).expect("owner token");
    let mut on_n3 = lab.node("n3").ws(&owner).await.expect("ws n3");
    let e = on_n3
        .call("monitor.rearm", json!({ "attachment": attachment }))
        .await
        .expect_err("n3 holds no such attachment");
    assert!(e.to_string().contains(&attachment), "{e}");
    let r = on_n3
        .call("monitor.rearm", json!({ "attachment": attachment, "node": "n1" }))
        .await
        .expect("re-armed through n3");
    assert_eq!(r["rearmed"], true, "{r}");
    let l = n1.call("monitor.list", json!({})).await.expect("n1's monitors");
    let mine = l["attachments"]
        .as_array()
        .expect("attachments")
        .iter()
        .find(|x| x["id"] == attachment.as_str())
        .cloned()
        .expect("listed");
    assert_eq!(mine["state"], "armed", "{l}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_attach_without_monitor_places_the_monitor_on_the_targets_node() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n3) = (lab.node("n1"), lab.node("n3"));
    n3.call(
        "agent.create",
        json!({ "name": "coder", "harness": "fake", "rules": [
            { "match": "^crash", "actions": [{ "say": "segfault" }] }
        ] }),
    )
    .await
    .expect("coder on n3");
    let rules = n1.dir.join("advisor-rules.json");
    std::fs::write(&rules, advisor_rules().to_string()).expect("rules file");

    // From n1's CLI, a bare target name: found on n3, the monitor goes there.
    let out = std::process::Command::new(tests_netlab::warren_exe())
        .args(["monitor", "attach", "--target", "coder", "--keywords", "segfault"])
        .args(["--harness", "fake", "--rules-file", &rules.display().to_string()])
        .args(["--data-dir", &n1.dir.display().to_string()])
        .output()
        .expect("warren monitor attach");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n--- n1:\n{}", n1.log());
    assert!(stderr.contains("monitor-coder@n3"), "{stderr}");

    let m = n3
        .call("agent.get", json!({ "agent": "monitor-coder" }))
        .await
        .expect("the monitor agent homes on n3");
    let persona = m["agent"]["persona"].as_str().unwrap_or_default();
    assert!(persona.starts_with("You are a monitor"), "the advisor persona: {m}");
    let mine = n1.call("agent.list", json!({})).await.expect("n1's own list");
    assert_eq!(mine["agents"], json!([]), "nothing was created on n1");
    let here = n1.call("monitor.list", json!({})).await.expect("n1's monitors");
    assert_eq!(here["attachments"], json!([]), "{here}");
    let there = n3.call("monitor.list", json!({})).await.expect("n3's monitors");
    let a = there["attachments"][0].clone();
    assert_eq!(a["monitor"], "monitor-coder", "{there}");
    assert_eq!(
        a["target"],
        json!({ "agent": "coder" }),
        "a local target on n3: {there}"
    );
    assert!(!n3.dir.join("monitors").exists(), "a local target needs no delegation");

    // It works there: the keyword fires on n3, the advice lands on n3.
    let conv = n3.idle_conversation("coder").await.expect("an idle conversation");
    n3.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "crash" }),
    )
    .await
    .expect("send");
    wait_for("the advice on n3", Duration::from_secs(30), || async {
        (count_events(n3, &conv, "monitor:monitor-coder", "look at the pointer").await == 1).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n3:\n{}", n3.log()));

    // `NAME@NODE` with an explicit `--monitor NAME@NODE` places it there too
    // (here: on n2, watching coder@n3 from another member).
    let out = std::process::Command::new(tests_netlab::warren_exe())
        .args(["monitor", "attach", "--target", "coder@n3", "--keywords", "panic"])
        .args(["--monitor", "watcher@n2", "--watch-only", "--harness", "fake"])
        .args(["--data-dir", &n1.dir.display().to_string()])
        .output()
        .expect("warren monitor attach");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let n2 = lab.node("n2");
    n2.call("agent.get", json!({ "agent": "watcher" }))
        .await
        .expect("watcher homes on n2");
    let l = n2.call("monitor.list", json!({})).await.expect("n2's monitors");
    assert_eq!(l["attachments"][0]["target"], json!({ "agent": "coder@n3" }), "{l}");
    assert_eq!(l["attachments"][0]["inject"], false, "{l}");

    // n1 homes no attachment; its fleet-wide list shows both, each naming
    // its member, and the CLI prints them as MONITOR@NODE.
    let all = n1
        .call("monitor.list", json!({ "fleet": true }))
        .await
        .expect("the fleet's monitors");
    let mut seen: Vec<(String, String)> = all["attachments"]
        .as_array()
        .expect("attachments")
        .iter()
        .map(|a| {
            (
                a["monitor"].as_str().unwrap_or("").into(),
                a["node"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [("monitor-coder".into(), "n3".into()), ("watcher".into(), "n2".into())],
        "{all}"
    );
    assert_eq!(all["unreachable"], json!([]), "{all}");
    let out = std::process::Command::new(tests_netlab::warren_exe())
        .args([
            "monitor",
            "list",
            "--fleet",
            "--data-dir",
            &n1.dir.display().to_string(),
        ])
        .output()
        .expect("warren monitor list --fleet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("\twatcher@n2 -> coder@n3\t") && stdout.contains("\tmonitor-coder@n3 -> coder\t"),
        "{stdout}"
    );
}
