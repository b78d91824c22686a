//! Adapter for aider (aider-chat 0.86, the `aider` image). Launch: HOME is the
//! agent's home, and aider's own files for a conversation live in
//! `~/.aider/warren/`, named by the conversation's resume reference: the chat
//! history (the transcript source, and what `--restore-chat-history` resumes
//! from) and the analytics log (each turn's tokens and cost, for spend).
//! Flags keep it quiet at start (no update check, release notes, model
//! warnings or analytics prompt), out of git (`--no-git`: the workspace need
//! not be a repository, and aider would otherwise offer to create one and
//! commit its edits), and non-streaming (`--no-stream`: aider then reports the
//! provider's own token counts, not a local estimate). Its model endpoint and
//! key come from `[harnesses.aider.env]` (`OPENAI_API_BASE`, `OPENAI_API_KEY`,
//! or any `AIDER_*` option), its model from the agent.
//!
//! Screen: `aider_screen` (status, confirmations and their template).

use std::path::{Path, PathBuf};

use console_api::Status;
use serde_json::{Value, json};

use super::aider_screen::{aider_dialog, aider_shaped, status_of};
use super::{Dialog, Entry, Harness, HarnessError, HarnessSettings, LaunchContext, LaunchPlan, ReportedUsage};
use crate::runtime::ScreenSnapshot;

pub struct AiderHarness;

/// aider's own directory in its HOME; warren's files for it go in `warren/`.
const FILES_DIR: &str = ".aider/warren";
/// The input history (up-arrow recall), one per agent.
const INPUT_HISTORY: &str = ".aider/warren/input.history";
/// The agent's persona, given to aider as a read-only file (`--read`).
const PERSONA_FILE: &str = ".aider/warren/persona.md";
/// What the agent is told about its mounted warren tools, also `--read`.
const TOOLS_FILE: &str = ".aider/warren/tools.md";
/// aider's cache of model prices. With none it downloads one at every start;
/// a stub (marked as ours) keeps it offline, and aider then uses litellm's
/// bundled prices (`LITELLM_LOCAL_MODEL_COST_MAP`).
const MODEL_CACHE: &str = ".aider/caches/model_prices_and_context_window.json";
/// The key that marks the model cache stub as warren's.
const STUB_MARK: &str = "_warren_stub";
/// Longest text one transcript entry keeps.
const MAX_ENTRY_CHARS: usize = 16 * 1024;

/// Options that keep aider quiet at start and its reports where the node reads them.
const QUIET_ARGS: &[&str] = &[
    "--no-git",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-show-model-warnings",
    "--no-analytics",
    "--no-stream",
];

/// litellm uses its bundled model prices instead of downloading them.
const QUIET_ENV: &[(&str, &str)] = &[("LITELLM_LOCAL_MODEL_COST_MAP", "True")];

/// The conversation's chat history file (aider's markdown).
pub fn chat_history_file(home: &Path, resume_ref: &str) -> PathBuf {
    home.join(FILES_DIR).join(format!("{resume_ref}.chat.history.md"))
}

/// The conversation's analytics log (JSON lines; `message_send` events carry
/// each turn's tokens and cost).
pub fn analytics_file(home: &Path, resume_ref: &str) -> PathBuf {
    home.join(FILES_DIR).join(format!("{resume_ref}.analytics.jsonl"))
}

/// The model cache to write, unless the existing one is real (downloaded) data.
fn model_cache_stub(existing: Option<&str>) -> Option<Vec<u8>> {
    let real = existing
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|v| v.as_object().map(|o| !o.is_empty() && !o.contains_key(STUB_MARK)))
        .unwrap_or(false);
    (!real).then(|| json!({ STUB_MARK: {} }).to_string().into_bytes())
}

impl Harness for AiderHarness {
    fn name(&self) -> &'static str {
        "aider"
    }

    /// `[harnesses.aider] program`, else `aider` on PATH (the image's own in a guest).
    fn program(&self, settings: &HarnessSettings, _self_exe: &Path) -> PathBuf {
        settings.program.clone().unwrap_or_else(|| PathBuf::from("aider"))
    }

    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError> {
        let history = chat_history_file(ctx.home, ctx.resume_ref);
        let mut args: Vec<String> = QUIET_ARGS.iter().map(|a| a.to_string()).collect();
        args.extend([
            "--chat-history-file".into(),
            history.display().to_string(),
            "--input-history-file".into(),
            ctx.home.join(INPUT_HISTORY).display().to_string(),
            "--analytics-log".into(),
            analytics_file(ctx.home, ctx.resume_ref).display().to_string(),
        ]);
        if ctx.resume {
            args.push("--restore-chat-history".into());
        }
        if let Some(model) = ctx.agent.model.as_deref().filter(|m| !m.is_empty()) {
            args.push("--model".into());
            args.push(model.to_string());
        }
        let mut files = vec![];
        if let Some(persona) = ctx.agent.persona.as_deref().filter(|p| !p.is_empty()) {
            files.push((PathBuf::from(PERSONA_FILE), persona.as_bytes().to_vec()));
            args.push("--read".into());
            args.push(ctx.home.join(PERSONA_FILE).display().to_string());
        }
        if !ctx.tool_notes.is_empty() {
            files.push((PathBuf::from(TOOLS_FILE), ctx.tool_notes.as_bytes().to_vec()));
            args.push("--read".into());
            args.push(ctx.home.join(TOOLS_FILE).display().to_string());
        }
        let existing = std::fs::read_to_string(ctx.home.join(MODEL_CACHE)).ok();
        if let Some(stub) = model_cache_stub(existing.as_deref()) {
            files.push((PathBuf::from(MODEL_CACHE), stub));
        }
        let mut env: Vec<(String, String)> = QUIET_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        env.extend(ctx.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(LaunchPlan {
            program: self.program(ctx.settings, ctx.self_exe),
            args,
            env,
            files,
            transcript_file: Some(history),
        })
    }

    fn status(&self, screen: &ScreenSnapshot) -> Status {
        status_of(&screen.lines, screen.cols)
    }

    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog> {
        aider_dialog(&screen.lines, screen.cols)
    }

    fn supervision_dialog(
        &self,
        dialog: &Dialog,
        cwd: &Path,
        _hook: Option<&crate::harness::hooks::ToolRequest>,
    ) -> supervision::Dialog {
        aider_shaped(dialog, cwd)
    }

    fn session_record_len(&self, unread: &[u8]) -> Option<usize> {
        record_len(unread)
    }

    fn parse_session_line(&self, record: &str) -> Option<Entry> {
        parse_record(record)
    }

    fn usage_file(&self, home: &Path, resume_ref: &str) -> Option<PathBuf> {
        Some(analytics_file(home, resume_ref))
    }

    fn parse_usage_line(&self, line: &str) -> Option<ReportedUsage> {
        parse_analytics_line(line)
    }
}

// ---- the chat history file ----

/// What a line of the chat history is, by aider's own reading of it
/// (`split_chat_history_markdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// `# aider chat started at ...`
    Header,
    /// `#### ` lines: the user's input.
    User,
    /// `> ` lines: aider's own output (tool output, questions and answers,
    /// token reports).
    Tool,
    /// Everything else: the model's reply.
    Assistant,
    Blank,
}

fn line_kind(line: &str) -> LineKind {
    if line.trim().is_empty() {
        LineKind::Blank
    } else if line.starts_with("#### ") || line.trim_end() == "####" {
        LineKind::User
    } else if line.starts_with("# ") {
        LineKind::Header
    } else if line.starts_with("> ") || line.trim_end() == ">" {
        LineKind::Tool
    } else {
        LineKind::Assistant
    }
}

/// One record of the chat history: a run of complete lines of one kind (blank
/// lines go with the run they follow), ending before the first line of
/// another kind. aider writes each message whole, so a run at the end of what
/// has been written is taken as complete.
pub fn record_len(unread: &[u8]) -> Option<usize> {
    let mut kind = None;
    let mut end = 0;
    for line in unread.split_inclusive(|b| *b == b'\n') {
        if !line.ends_with(b"\n") {
            break;
        }
        let k = line_kind(&String::from_utf8_lossy(line));
        match (kind, k) {
            (_, LineKind::Blank) => {}
            (None, k) => kind = Some(k),
            (Some(run), k) if run != k => break,
            _ => {}
        }
        end += line.len();
    }
    (end > 0).then_some(end)
}

/// A record as an attributed entry; `None` for headers and blank runs.
pub fn parse_record(record: &str) -> Option<Entry> {
    let kind = record.lines().map(line_kind).find(|k| *k != LineKind::Blank)?;
    let strip = |prefix: &str, bare: &str| -> String {
        record
            .lines()
            .map(|l| {
                let l = l.trim_end();
                l.strip_prefix(prefix).unwrap_or(if l == bare { "" } else { l })
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (speaker, kind, text) = match kind {
        LineKind::Header | LineKind::Blank => return None,
        LineKind::User => ("human", "terminal_input", strip("#### ", "####")),
        LineKind::Tool => ("tool", "tool_output", strip("> ", ">")),
        LineKind::Assistant => ("agent", "reply", record.to_string()),
    };
    let text = text.trim();
    if text.is_empty() || text == "<blank>" {
        return None;
    }
    Some(Entry {
        speaker,
        kind,
        text: text.chars().take(MAX_ENTRY_CHARS).collect(),
    })
}

// ---- the analytics log ----

/// A `message_send` event: one turn's tokens and cost as aider reports them.
/// aider names no cache split there; a cost of 0 means it knows no price for
/// the model (unpriced), not a free turn.
pub fn parse_analytics_line(line: &str) -> Option<ReportedUsage> {
    let v: Value = serde_json::from_str(line).ok()?;
    if v["event"] != "message_send" {
        return None;
    }
    let p = &v["properties"];
    let tokens = |key: &str| p[key].as_u64().unwrap_or(0);
    let model = p["main_model"]
        .as_str()
        .filter(|m| !m.is_empty() && !m.ends_with("/REDACTED"))
        .map(str::to_string);
    Some(ReportedUsage {
        model,
        input: tokens("prompt_tokens"),
        output: tokens("completion_tokens"),
        cache_read: 0,
        cache_write: 0,
        usd: p["cost"].as_f64().filter(|c| *c > 0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chat history as aider 0.86.2 writes it.
    const HISTORY: &str = "
# aider chat started at 2026-12-01 09:00:23

> /opt/aider/bin/aider --no-git --model openai/gpt-4o-mini  
> Aider v0.86.2  
> Model: openai/gpt-4o-mini with diff edit format  

#### hello there  

You said: hello there

> Tokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.  

#### first line  
#### second line  

I will run it.

```bash
echo hi > ran.txt
```

> Tokens: 42 sent, 16 received.  
> echo hi > ran.txt  
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  
> Running echo hi > ran.txt  
";

    fn records(text: &str) -> Vec<Entry> {
        let mut rest = text.as_bytes();
        let mut out = vec![];
        while let Some(n) = record_len(rest) {
            let (record, tail) = rest.split_at(n);
            let record = String::from_utf8_lossy(record);
            if let Some(e) = parse_record(record.strip_suffix('\n').unwrap_or(&record)) {
                out.push(e);
            }
            rest = tail;
        }
        assert!(rest.is_empty(), "all of it is read: {rest:?}");
        out
    }

    #[test]
    fn the_chat_history_is_attributed_by_aiders_own_rules() {
        let got: Vec<(&str, &str, String)> = records(HISTORY)
            .into_iter()
            .map(|e| (e.speaker, e.kind, e.text))
            .collect();
        let want = vec![
            (
                "tool",
                "tool_output",
                "/opt/aider/bin/aider --no-git --model openai/gpt-4o-mini\nAider v0.86.2\nModel: openai/gpt-4o-mini with diff edit format".to_string(),
            ),
            ("human", "terminal_input", "hello there".into()),
            ("agent", "reply", "You said: hello there".into()),
            (
                "tool",
                "tool_output",
                "Tokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.".into(),
            ),
            ("human", "terminal_input", "first line\nsecond line".into()),
            ("agent", "reply", "I will run it.\n\n```bash\necho hi > ran.txt\n```".into()),
            (
                "tool",
                "tool_output",
                "Tokens: 42 sent, 16 received.\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y\nRunning echo hi > ran.txt".into(),
            ),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn records_wait_for_complete_lines_and_stop_at_a_new_kind() {
        assert_eq!(record_len(b""), None);
        assert_eq!(record_len(b"#### hel"), None);
        assert_eq!(record_len(b"#### hello  \n\nYou sa"), Some(14));
        assert_eq!(record_len(b"\n"), Some(1));
        // A reply's blank lines belong to it.
        assert_eq!(record_len(b"a\n\nb\n\n> Tokens\n"), Some(6));
        assert_eq!(parse_record("\n\n"), None);
        assert_eq!(parse_record("#### <blank>  "), None);
        assert_eq!(parse_record("# aider chat started at 2026-12-01"), None);
    }

    #[test]
    fn turns_are_read_from_the_analytics_log() {
        let line = r#"{"event": "message_send", "properties": {"main_model": "openai/REDACTED", "edit_format": "diff", "prompt_tokens": 2417, "completion_tokens": 16, "total_tokens": 2433, "cost": 0.00037215, "total_cost": 0.00037215}, "user_id": "u", "time": 1}"#;
        let u = parse_analytics_line(line).expect("usage");
        assert_eq!((u.input, u.output, u.model.as_deref()), (2417, 16, None));
        assert_eq!(u.usd, Some(0.00037215));
        let unpriced = r#"{"event": "message_send", "properties": {"main_model": "gpt-4o", "prompt_tokens": 5, "completion_tokens": 1, "cost": 0.0}}"#;
        let u = parse_analytics_line(unpriced).expect("usage");
        assert_eq!((u.usd, u.model.as_deref()), (None, Some("gpt-4o")));
        for other in [
            r#"{"event": "launched", "properties": {}}"#,
            r#"{"event": "message_send_starting", "properties": {}}"#,
            "not json",
        ] {
            assert_eq!(parse_analytics_line(other), None, "{other}");
        }
    }

    #[test]
    fn the_plan_names_the_conversations_files_and_resumes_with_them() {
        let home = tempfile::tempdir().expect("tempdir");
        let agent = node_store::events::AgentRecord {
            name: "ad".into(),
            harness: "aider".into(),
            persona: Some("Be brief.".into()),
            model: Some("gpt-4o-mini".into()),
            grants: node_store::events::GrantsRecord {
                tools: vec![],
                peers: None,
                recall: false,
                egress: vec![],
            },
            rules: vec![],
            resources: None,
            workspace: None,
        };
        let settings = HarnessSettings {
            env: [("OPENAI_API_BASE".to_string(), "http://m/v1".to_string())].into(),
            ..HarnessSettings::default()
        };
        let plan_of = |resume| {
            AiderHarness
                .plan(&LaunchContext {
                    tools: &[],
                    tool_notes: "",
                    warren_exe: Path::new("/bin/warren"),
                    agent: &agent,
                    home: home.path(),
                    workspace: Path::new("/w"),
                    resume_ref: "r-1",
                    resume,
                    self_exe: Path::new("/bin/warren"),
                    settings: &settings,
                })
                .expect("plan")
        };
        let fresh = plan_of(false);
        let history = home.path().join(".aider/warren/r-1.chat.history.md");
        assert_eq!(fresh.program, PathBuf::from("aider"));
        assert_eq!(fresh.transcript_file.as_deref(), Some(history.as_path()));
        let args = fresh.args.join(" ");
        for want in [
            "--no-git",
            "--no-stream",
            "--model gpt-4o-mini",
            &format!("--chat-history-file {}", history.display()),
            &format!(
                "--analytics-log {}",
                home.path().join(".aider/warren/r-1.analytics.jsonl").display()
            ),
            &format!("--read {}", home.path().join(PERSONA_FILE).display()),
        ] {
            assert!(args.contains(want), "{want:?} in {args}");
        }
        assert!(!args.contains("--restore-chat-history"));
        assert!(fresh.env.contains(&("OPENAI_API_BASE".into(), "http://m/v1".into())));
        assert!(fresh.files.iter().any(|(p, _)| p == Path::new(MODEL_CACHE)));
        assert!(plan_of(true).args.contains(&"--restore-chat-history".to_string()));
        assert_eq!(
            AiderHarness.usage_file(home.path(), "r-1"),
            Some(home.path().join(".aider/warren/r-1.analytics.jsonl"))
        );
    }

    #[test]
    fn the_model_cache_stub_never_replaces_downloaded_prices() {
        assert!(model_cache_stub(None).is_some());
        assert!(
            model_cache_stub(Some("{}")).is_some(),
            "aider writes {{}} after a failed download"
        );
        assert!(model_cache_stub(Some("garbage")).is_some());
        let stub = String::from_utf8(model_cache_stub(None).unwrap()).unwrap();
        assert!(model_cache_stub(Some(&stub)).is_some(), "ours is refreshed");
        assert_eq!(
            model_cache_stub(Some(r#"{"gpt-4o": {"input_cost_per_token": 1e-6}}"#)),
            None
        );
    }
}
