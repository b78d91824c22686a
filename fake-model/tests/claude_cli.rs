//! Runs the real Claude Code CLI against the fake model, when `WARREN_CLAUDE_BIN` points at it.
//!
//! The binary is fetched by a separate script, so without the variable these tests say so and return.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use fake_model::FakeModel;

const API_KEY: &str = "sk-ant-fake-0123456789abcdefghij";

/// The Claude Code binary to run, or `None` (with a message) when the variable is unset.
fn claude_bin() -> Option<String> {
    let bin = std::env::var("WARREN_CLAUDE_BIN").ok().filter(|b| !b.is_empty());
    if bin.is_none() {
        eprintln!("WARREN_CLAUDE_BIN is not set: skipping the real Claude Code CLI test");
    }
    bin
}

/// Writes a config that skips onboarding and pre-approves the fake API key.
fn write_config(dir: &Path) {
    let key_suffix = &API_KEY[API_KEY.len() - 20..];
    let config = serde_json::json!({
        "hasCompletedOnboarding": true,
        "hasSeenAutoDefaultNudge": true,
        "customApiKeyResponses": {"approved": [key_suffix], "rejected": []}
    });
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(".claude.json"), config.to_string()).unwrap();
}

/// Runs `claude -p PROMPT EXTRA...` in a clean environment and returns its stdout.
async fn run_claude(bin: &str, model: &FakeModel, prompt: &str, extra: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("cfg");
    write_config(&config_dir);
    let mut command = tokio::process::Command::new(bin);
    command
        .args(["-p", prompt, "--output-format", "text"])
        .args(extra)
        .env_clear()
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", &config_dir)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(home.path())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "claude failed: {}\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    stdout
}

async fn start() -> FakeModel {
    FakeModel::start("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

#[tokio::test]
async fn real_claude_code_echoes_a_prompt() {
    let Some(bin) = claude_bin() else { return };
    let model = start().await;
    let stdout = run_claude(&bin, &model, "hello there", &[]).await;
    assert!(stdout.contains("You said: hello there"), "stdout: {stdout}");
    assert!(model.requests() >= 1);
}

#[tokio::test]
async fn real_claude_code_runs_a_bash_command() {
    let Some(bin) = claude_bin() else { return };
    let model = start().await;
    let stdout = run_claude(&bin, &model, "run: echo warren-marker", &["--allowedTools", "Bash"]).await;
    assert!(stdout.contains("Tool finished: warren-marker"), "stdout: {stdout}");
    assert!(model.requests() >= 2);
}
