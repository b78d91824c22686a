//! End-to-end tests: the fake-cli binary in a real PTY, observed through vt100.

mod support;

use std::time::{Duration, Instant};

use support::{COLS, Cli, is_idle, session_lines};

fn pair(kind: &str, text: &str) -> (String, String) {
    (kind.to_string(), text.to_string())
}

#[test]
fn echoes_typed_and_pasted_messages() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let sessions_arg = sessions.to_str().unwrap();
    let mut cli = Cli::spawn(&["--session-dir", sessions_arg, "--session-id", "s1"], dir.path());
    let screen = cli.wait_idle();
    assert!(screen.contains("✻ Welcome to Fake Code!"), "{screen}");
    assert!(screen.contains("  session: s1"), "{screen}");
    assert!(screen.lines().any(|l| l == "─".repeat(usize::from(COLS))), "{screen}");
    assert!(screen.contains("  ? for shortcuts"), "{screen}");
    assert!(cli.raw_output().contains("\x1b[?2004h"));

    // Ctrl-C clears a non-empty input.
    cli.send("scratch");
    cli.wait_text("❯ scratch");
    cli.send("\x03");
    cli.wait_for("cleared prompt", |s| !s.contains("scratch"));

    cli.submit("hello there");
    cli.wait_text("● echo: hello there");
    let screen = cli.wait_idle();
    assert!(screen.contains("> hello there"), "{screen}");

    cli.send("\x1b[200~line one\rline two\x1b[201~");
    cli.wait_for("multi-line input", |s| s.contains("❯ line one\n  line two"));
    cli.send("\r");
    cli.wait_text("● echo: line one\n  line two");
    cli.wait_idle();

    assert_eq!(
        session_lines(&sessions.join("s1.jsonl")),
        vec![
            pair("user", "hello there"),
            pair("assistant", "echo: hello there"),
            pair("user", "line one\nline two"),
            pair("assistant", "echo: line one\nline two"),
        ]
    );
}

#[test]
fn bash_dialog_approve_and_deny() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(
        &["--session-dir", sessions.to_str().unwrap(), "--session-id", "b"],
        dir.path(),
    );
    cli.wait_idle();
    cli.submit("/fake tool bash touch made.txt");
    // The footer is drawn last: once it shows, the whole dialog is on screen.
    cli.wait_text(" ❯ 1. Yes");
    let screen = cli.wait_text(" Esc to cancel · Tab to amend");
    for line in [
        " Bash command",
        " touch made.txt",
        " Do you want to proceed?",
        "   4. No",
        " Esc to cancel · Tab to amend",
    ] {
        assert!(screen.lines().any(|l| l == line), "missing {line:?} in\n{screen}");
    }
    assert!(screen.contains("   2. Yes, and always allow access to "), "{screen}");
    assert!(!screen.lines().any(|l| l.starts_with('❯')), "{screen}");
    assert!(!screen.contains("esc to interrupt"), "{screen}");
    cli.send("1");
    cli.wait_text("● Ran: touch made.txt (exit 0)");
    cli.wait_text("  ⎿  $ touch made.txt");
    cli.wait_idle();
    assert!(dir.path().join("made.txt").exists());

    cli.submit("/fake tool bash touch nope.txt");
    cli.wait_text("Do you want to proceed?");
    cli.send("4");
    cli.wait_text("● Permission denied: touch nope.txt");
    cli.wait_idle();
    assert!(!dir.path().join("nope.txt").exists());

    // Esc cancels like "No"; arrows + Enter select.
    cli.submit("/fake tool bash echo hi");
    cli.wait_text("Do you want to proceed?");
    cli.send("\x1b");
    cli.wait_text("● Permission denied: echo hi");
    cli.wait_idle();
    cli.submit("/fake tool bash echo hi");
    cli.wait_text("Do you want to proceed?");
    cli.send("\x1b[B\x1b[B\x1b[A");
    cli.wait_text(" ❯ 2. Yes, and always allow");
    cli.send("\r");
    cli.wait_text("● Ran: echo hi (exit 0)");
    cli.wait_idle();

    let lines = session_lines(&sessions.join("b.jsonl"));
    assert_eq!(lines[1], pair("tool", "$ touch made.txt"));
    assert_eq!(lines[2], pair("assistant", "Ran: touch made.txt (exit 0)"));
    assert!(lines.contains(&pair("tool", "$ echo hi\nhi")));
    assert!(
        lines.iter().any(
            |(k, t)| k == "system" && t.starts_with("standing permission granted: Yes, and always allow access to")
        )
    );
}

#[test]
fn edit_ask_and_limit_dialogs() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(&["--session-dir", sessions.to_str().unwrap()], dir.path());
    cli.wait_idle();

    cli.submit("/fake edit notes.txt");
    cli.wait_text(" Do you want to make this edit to notes.txt?");
    let screen = cli.wait_text(" Esc to cancel");
    assert!(screen.contains(" + edited by fake-cli"), "{screen}");
    cli.send("1");
    cli.wait_text("● Edited notes.txt");
    cli.wait_idle();
    let edited = std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    assert_eq!(edited, "edited by fake-cli\n");

    // Two dialogs in one message: the second opens after the first is answered.
    cli.send("\x1b[200~/fake ask Which colour? | Red | Blue\r/fake limit\x1b[201~\r");
    cli.wait_text(" ☐ Question");
    let screen = cli.wait_text(" Enter to select · ↑/↓ to navigate · Esc to cancel");
    for line in [" Which colour?", " ❯ 1. Red", "   2. Blue", "   3. Type something."] {
        assert!(screen.lines().any(|l| l == line), "missing {line:?} in\n{screen}");
    }
    cli.send("\x1b[B");
    cli.wait_text(" ❯ 2. Blue");
    cli.send("\r");
    cli.wait_text("● You chose: Blue");
    cli.wait_text(" You've hit your usage limit · resets 3pm (UTC)");
    let screen = cli.wait_text(" Enter to confirm · Esc to cancel");
    assert!(screen.contains(" ❯ 1. Stop and wait for limit to reset"), "{screen}");
    cli.send("\x1b");
    cli.wait_text("● Dismissed");
    cli.wait_idle();
}

#[test]
fn busy_spinner_interrupt_and_queue() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(&["--session-dir", sessions.to_str().unwrap()], dir.path());
    cli.wait_idle();

    cli.submit("/fake busy 0.6");
    let screen = cli.wait_text("esc to interrupt");
    assert!(screen.contains("Thinking… ("), "{screen}");
    assert!(
        screen.lines().any(|l| l.starts_with('❯')),
        "prompt stays visible:\n{screen}"
    );
    // A message typed while busy is queued and runs afterwards.
    cli.submit("after busy");
    cli.wait_text("● Finished busy work (0.6 s)");
    cli.wait_text("● echo: after busy");
    cli.wait_idle();

    cli.send("\x1b[200~/fake busy 30\n/fake say never\x1b[201~\r");
    cli.wait_text("esc to interrupt");
    cli.send("\x1b");
    cli.wait_text("● Interrupted");
    let screen = cli.wait_idle();
    assert!(!screen.contains("● never"), "{screen}");
}

#[test]
fn exit_then_resume_shows_history() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let sessions_arg = sessions.to_str().unwrap();
    let mut cli = Cli::spawn(&["--session-dir", sessions_arg], dir.path());
    cli.wait_idle();
    cli.submit("remember me");
    cli.wait_text("● echo: remember me");
    cli.wait_idle();
    cli.submit("/fake exit");
    assert_eq!(cli.wait_exit(), 0);
    let screen = cli.wait_text("Resume this session with:");
    let id = screen
        .lines()
        .find_map(|l| l.strip_prefix("warren fake-cli --resume "))
        .unwrap_or_else(|| panic!("no resume hint in\n{screen}"))
        .trim()
        .to_string();
    assert_eq!(id.len(), 32, "{id}");
    assert!(cli.raw_output().contains("\x1b[?2004l"));
    let file = sessions.join(format!("{id}.jsonl"));
    assert_eq!(
        session_lines(&file),
        vec![
            pair("user", "remember me"),
            pair("assistant", "echo: remember me"),
            pair("user", "/fake exit"),
            pair("system", "exited"),
        ]
    );

    let mut cli = Cli::spawn(&["--session-dir", sessions_arg, "--resume", &id], dir.path());
    let screen = cli.wait_text("  ✻ resumed");
    assert!(screen.contains("> remember me\n\n● echo: remember me"), "{screen}");
    assert!(is_idle(&screen), "{screen}");
    assert_eq!(session_lines(&file).last(), Some(&pair("system", "resumed")));
    cli.send("\x04");
    assert_eq!(cli.wait_exit(), 0);
}

#[test]
fn rules_file_drives_replies() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules":[{"match":"deploy (\\w+)","actions":[{"say":"deploying $1"},{"shell":"echo shell-out"}]}]}"#,
    )
    .unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(
        &[
            "--session-dir",
            sessions.to_str().unwrap(),
            "--rules",
            rules.to_str().unwrap(),
        ],
        dir.path(),
    );
    cli.wait_idle();
    cli.submit("please deploy web now");
    cli.wait_text("● deploying web\n\n  ⎿  $ echo shell-out\n     shell-out");
    cli.wait_idle();
    cli.submit("something else");
    cli.wait_text("● echo: something else");
}

#[test]
fn dialog_guard_drops_early_keys() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(
        &["--session-dir", sessions.to_str().unwrap(), "--dialog-guard-ms", "300"],
        dir.path(),
    );
    cli.wait_idle();
    cli.submit("/fake tool bash echo guarded");
    cli.wait_text("Do you want to proceed?");
    let seen = Instant::now();
    // Keep pressing "1" until the dialog takes it.
    loop {
        cli.send("1");
        if cli.screen().contains("● Ran: echo guarded") {
            break;
        }
        assert!(
            seen.elapsed().as_secs() < 5,
            "dialog never accepted a key:\n{}",
            cli.screen()
        );
        // Retry pacing only; the loop's exit condition is the screen.
        std::thread::sleep(Duration::from_millis(40));
    }
    assert!(seen.elapsed().as_millis() >= 200, "key accepted too early");
}

#[test]
fn resize_redraws_at_new_width() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let cli = Cli::spawn(&["--session-dir", sessions.to_str().unwrap()], dir.path());
    cli.wait_idle();
    cli.resize(30, 60);
    cli.wait_for("60-wide rule", |s| s.lines().any(|l| l == "─".repeat(60)));
}

#[test]
fn closing_the_terminal_ends_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut cli = Cli::spawn(&["--session-dir", sessions.to_str().unwrap()], dir.path());
    cli.wait_idle();
    cli.close_terminal();
    cli.wait_exit();
}
