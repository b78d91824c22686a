//! Start-up errors and non-terminal behaviour of the fake-cli binary (plain pipes, no PTY).

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fake-cli"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run fake-cli")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unknown_flag_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["--frobnicate"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--frobnicate"), "{}", stderr(&out));
}

#[test]
fn resume_of_missing_session_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["--session-dir", "s", "--resume", "missing"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim(), "No conversation found with session ID: missing");
}

#[test]
fn session_id_in_use_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("s")).unwrap();
    std::fs::write(dir.path().join("s/taken.jsonl"), "").unwrap();
    let out = run(&["--session-dir", "s", "--session-id", "taken"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).trim(), "session ID already in use: taken");
}

#[test]
fn bad_rules_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rules.json"),
        r#"{"rules":[{"match":"(","actions":[]}]}"#,
    )
    .unwrap();
    let out = run(&["--session-dir", "s", "--rules", "rules.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("rules.json"), "{}", stderr(&out));
    let out = run(&["--session-dir", "s", "--rules", "absent.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("absent.json"), "{}", stderr(&out));
}

#[test]
fn stdin_eof_exits_and_default_dir_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("\x1b[?2004h"), "{stdout:?}");
    // Without a terminal the screen falls back to 80 columns.
    assert!(stdout.contains(&"─".repeat(80)), "{stdout:?}");
    let sessions: Vec<_> = std::fs::read_dir(dir.path().join(".fake-cli/sessions"))
        .unwrap()
        .collect();
    assert_eq!(sessions.len(), 1);
}
