//! `/fake spend MODEL INPUT OUTPUT`: a model request the fake CLI "made",
//! written as Claude Code writes one (an `assistant` line with
//! `message.usage`, a unique `message.id` and `requestId`) to
//! `$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl` (else
//! `$HOME/.claude/...`), so the node's spend ledger and budgets see usage.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The project folder the lines go in (Claude Code names it after the cwd).
const PROJECT: &str = "-fake-cli";

/// Where the session's usage lines go, from the environment.
pub(crate) fn usage_file(session_id: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))?;
    Some(dir.join("projects").join(PROJECT).join(format!("{session_id}.jsonl")))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for unix milliseconds.
pub(crate) fn rfc3339(ms: u64) -> String {
    spend::time::rfc3339_ms(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// The line of one request.
pub(crate) fn line(session_id: &str, n: u64, model: &str, input: u64, output: u64, ms: u64) -> String {
    serde_json::json!({
        "type": "assistant",
        "sessionId": session_id,
        "timestamp": rfc3339(ms),
        "requestId": format!("req_fake_{session_id}_{ms}_{n}"),
        "message": {
            "id": format!("msg_fake_{session_id}_{ms}_{n}"),
            "model": model,
            "role": "assistant",
            "stop_reason": "end_turn",
            "content": [],
            "usage": {
                "input_tokens": input,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "output_tokens": output,
            },
        },
    })
    .to_string()
}

/// Appends one request's line to `path`.
pub(crate) fn append(path: &Path, line: &str) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(format!("{line}\n").as_bytes())
}

/// Now, in unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_793_700_000_123), "2026-11-03T10:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_line_is_one_claude_request() {
        let l = line("s1", 3, "claude-sonnet-4-5", 10, 2000, 1_793_700_000_000);
        let v: serde_json::Value = serde_json::from_str(&l).expect("json");
        assert_eq!(v["type"], "assistant");
        assert_eq!(v["message"]["usage"]["output_tokens"], 2000);
        assert_eq!(v["message"]["id"], "msg_fake_s1_1793700000000_3");
    }
}
