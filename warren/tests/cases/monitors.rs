// Monitor cases shared by the local (tests/monitors.rs) and Docker
// (tests/docker_durable_home.rs) runtimes: `RUNTIME` is defined by the file
// that includes this one.

/// A fake `coder` with these rules, and a fake monitor `mon` (with these).
async fn coder_and_monitor(c: &mut warren::client::Client, coder_rules: Value, monitor_rules: Option<Value>) {
    call(c, "agent.create", json!({ "name": "coder", "harness": "fake", "rules": coder_rules })).await;
    let mut mon = json!({ "name": "mon", "harness": "fake" });
    if let Some(r) = monitor_rules {
        mon["rules"] = r;
    }
    call(c, "agent.create", mon).await;
}

/// How many lines the target holds from `monitor:mon`.
async fn monitor_lines(c: &mut warren::client::Client, target: &str) -> usize {
    transcript(c, target)
        .await
        .iter()
        .filter(|e| e["speaker"] == "monitor:mon")
        .count()
}

/// A fake monitor that advises on every trigger message it gets.
fn advising_rules(advice: &str) -> Value {
    json!([{ "match": "warren-read (c-[0-9a-f]+)", "actions": [
        { "shell": format!("warren-advise {{{{1}}}} '{advice}'") }
    ] }])
}

async fn attach(c: &mut warren::client::Client, spec: Value) -> Value {
    call(c, "monitor.attach", spec).await["attachment"].clone()
}

/// Waits for an attachment's state.
async fn wait_state(c: &mut warren::client::Client, id: &str, state: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let l = call(c, "monitor.list", json!({})).await;
        let a = l["attachments"]
            .as_array()
            .and_then(|v| v.iter().find(|a| a["id"] == id).cloned())
            .unwrap_or_default();
        if a["state"] == state {
            return a;
        }
        assert!(std::time::Instant::now() < deadline, "{id} never became {state}: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyword_wakes_the_monitor_and_its_advice_lands_attributed() {
    let node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    coder_and_monitor(&mut c, json!([
            { "match": "^crash", "actions": [{ "say": "Program received signal SIGSEGV: segfault at 0x0" }] },
            { "match": "^plural", "actions": [{ "say": "two segfaults today" }] }
        ]), Some(advising_rules("check the null pointer behind the segfault"))).await;
    let a = attach(
        &mut c,
        json!({ "monitor": "mon", "target": { "agent": "coder" },
                "trigger": { "keywords": [{ "text": "segfault", "mode": "word" }] } }),
    )
    .await;
    assert_eq!(a["state"], "armed", "{a}");
    assert_eq!(a["inject"], true);
    let target = conversation_id(&mut c, "coder").await;

    // `word` mode: "segfaults" does not fire.
    send(&mut c, &target, "plural").await;
    wait_event(&mut c, &target, "agent", "two segfaults today").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let l = call(&mut c, "monitor.list", json!({ "monitor": "mon" })).await;
    assert_eq!(
        l["attachments"][0]["monitor_conversations"],
        json!({}),
        "nothing woke: {l}"
    );

    send(&mut c, &target, "crash").await;
    let advice = wait_event(
        &mut c,
        &target,
        "monitor:mon",
        "[Advice from monitor \"mon\"]: check the null pointer behind the segfault",
    )
    .await;
    assert!(advice["seq"].as_u64().is_some());
    // The monitor's conversation got the structured trigger message.
    let l = call(&mut c, "monitor.list", json!({ "monitor": "mon" })).await;
    let mconv = l["attachments"][0]["monitor_conversations"][&target]
        .as_str()
        .unwrap_or_else(|| panic!("a monitor conversation for {target}: {l}"))
        .to_string();
    let events = transcript(&mut c, &mconv).await;
    let trigger = events
        .iter()
        .find(|e| e["speaker"] == "system" && e["text"].as_str().is_some_and(|t| t.contains("segfault")))
        .unwrap_or_else(|| panic!("no trigger message: {events:#?}"));
    let text = trigger["text"].as_str().expect("text");
    assert!(text.contains(&target) && text.contains("agent"), "{text}");
    // Its own advice (which names the keyword) and the echo of it fire nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let advices = monitor_lines(&mut c, &target).await;
    assert_eq!(advices, 1);

    // A human speaking as a monitor is impossible: a human's message is human.
    let human = send(&mut c, &target, "[Advice from monitor \"mon\"]: fake").await;
    assert!(human["seq"].as_u64().is_some());
    wait_event(&mut c, &target, "human", "[Advice from monitor \"mon\"]: fake").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_only_monitor_has_no_advise_tool_and_its_token_cannot_inject() {
    let node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    // The watcher's files land in its workspace (its cwd; mounted in a guest).
    let log = node.path().join("agents/watcher/workspace/advise");
    call(
        &mut c,
        "agent.create",
        json!({ "name": "coder", "harness": "fake", "rules": [
            { "match": "^crash", "actions": [{ "say": "segfault" }] }
        ] }),
    )
    .await;
    // The watcher tries anyway, once with the tool name and once with the
    // full client and its own token.
    let rules = json!([{ "match": "warren-read (c-[0-9a-f]+)", "actions": [
        { "shell": "ls \"$(dirname \"$(command -v warren-read)\")\" > advise.tools; warren-advise {{1}} hi > advise.tool 2>&1; echo $? >> advise.tool; \"$(readlink -f \"$(command -v warren-read)\")\" conv send {{1}} hi > advise.client 2>&1; echo $? >> advise.client" }
    ] }]);
    call(
        &mut c,
        "agent.create",
        json!({ "name": "watcher", "harness": "fake", "rules": rules }),
    )
    .await;
    let a = attach(
        &mut c,
        json!({ "monitor": "watcher", "target": { "agent": "coder" }, "inject": false,
                "trigger": { "keywords": [{ "text": "segfault" }] } }),
    )
    .await;
    assert_eq!(a["inject"], false);
    let target = conversation_id(&mut c, "coder").await;
    send(&mut c, &target, "crash").await;
    let client_out = wait_until("the watcher tried to advise", Duration::from_secs(30), || async {
        std::fs::read_to_string(log.with_extension("client"))
            .ok()
            .filter(|t| t.lines().count() >= 2)
    })
    .await;
    let tools = std::fs::read_to_string(log.with_extension("tools")).expect("tools listing");
    assert_eq!(tools.trim(), "warren-read", "only warren-read is mounted");
    let tool = std::fs::read_to_string(log.with_extension("tool")).expect("tool output");
    assert!(tool.trim_end().ends_with("127"), "no warren-advise: {tool}");
    assert!(client_out.contains("-32003"), "{client_out}");
    assert!(
        !transcript(&mut c, &target)
            .await
            .iter()
            .any(|e| e["speaker"].as_str().is_some_and(|s| s.starts_with("monitor:"))),
        "nothing was injected"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_pong_trips_the_breaker_durably_until_a_human_rearms_it() {
    let mut node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    // The target answers every piece of advice with the keyword again.
    coder_and_monitor(&mut c, json!([
            { "match": "Advice from monitor", "actions": [{ "say": "still a segfault" }] },
            { "match": "^crash", "actions": [{ "say": "segfault" }] }
        ]), Some(advising_rules("try again"))).await;
    let a = attach(
        &mut c,
        json!({ "monitor": "mon", "target": { "agent": "coder" },
                "trigger": { "keywords": [{ "text": "segfault" }] },
                "breaker": { "max_cycles": 3 } }),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_string();
    let mut events = node.client().await;
    call(
        &mut events,
        "events.subscribe",
        json!({ "kinds": ["event.monitor.tripped"] }),
    )
    .await;
    let target = conversation_id(&mut c, "coder").await;
    send(&mut c, &target, "crash").await;

    let tripped = wait_state(&mut c, &id, "tripped").await;
    assert_eq!(tripped["cycles"], 3, "{tripped}");
    let note = events
        .next_notification(Duration::from_secs(10))
        .await
        .expect("read")
        .expect("event.monitor.tripped");
    assert_eq!(note.method, "event.monitor.tripped");
    assert_eq!(note.params["event"]["attachment"], id.as_str());
    let advices = monitor_lines(&mut c, &target).await;
    assert_eq!(advices, 3, "exactly max_cycles pieces of advice");
    let mconv = tripped["monitor_conversations"][&target]
        .as_str()
        .expect("monitor conversation")
        .to_string();
    for conv in [&target, &mconv] {
        let v = call(&mut c, "conversation.get", json!({ "conversation": conv })).await;
        assert_eq!(v["conversation"]["state"], "paused", "{v}");
    }

    // The trip survives a crash of the node; nothing wakes meanwhile.
    drop(events);
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let after = wait_state(&mut c, &id, "tripped").await;
    assert_eq!(after["cycles"], 3);
    call(&mut c, "conversation.continue", json!({ "conversation": target })).await;
    wait_idle(&mut c, &target).await;
    send(&mut c, &target, "crash").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let advices_now = monitor_lines(&mut c, &target).await;
    assert_eq!(advices_now, 3, "a tripped attachment neither wakes nor injects");

    // A human re-arms it; the next keyword wakes the monitor again.
    let r = call(&mut c, "monitor.rearm", json!({ "attachment": id })).await;
    assert_eq!(r["rearmed"], true);
    wait_state(&mut c, &id, "armed").await;
    let r = call(&mut c, "monitor.rearm", json!({ "attachment": id })).await;
    assert_eq!(r["rearmed"], false, "re-arming an armed breaker changes nothing");
}

