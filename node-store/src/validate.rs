//! Input validation: agent names, harnesses, field sizes, message text. Pure;
//! every error names the field and the rule it broke.

/// Harnesses the product knows. Only those with an adapter can start.
pub const KNOWN_HARNESSES: &[&str] = &["fake", "claude", "codex", "gemini", "opencode", "aider"];

pub const MAX_PERSONA_BYTES: usize = 16 * 1024;
pub const MAX_MODEL_BYTES: usize = 128;
pub const MAX_RULES: usize = 64;
pub const MAX_RULES_BYTES: usize = 64 * 1024;
pub const MAX_LIST_ITEMS: usize = 256;
/// Largest message `sendMessage` accepts.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Largest `sendKeys` payload.
pub const MAX_KEYS_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    pub field: &'static str,
    pub problem: String,
}

fn invalid(field: &'static str, problem: impl Into<String>) -> Invalid {
    Invalid {
        field,
        problem: problem.into(),
    }
}

/// Agent names: 1-63 chars, lowercase ASCII letters, digits and `-`, starting
/// with a letter, not ending with `-`.
pub fn agent_name(name: &str) -> Result<(), Invalid> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let starts = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    if name.is_empty() || name.len() > 63 || !ok_chars || !starts || name.ends_with('-') {
        return Err(invalid(
            "name",
            format!(
                "{name:?} is not a valid agent name (1-63 chars of a-z, 0-9 and '-', starting with a letter, not ending with '-')"
            ),
        ));
    }
    Ok(())
}

pub fn harness(h: &str) -> Result<(), Invalid> {
    if KNOWN_HARNESSES.contains(&h) {
        Ok(())
    } else {
        Err(invalid(
            "harness",
            format!("unknown harness {h:?}; known: {}", KNOWN_HARNESSES.join(", ")),
        ))
    }
}

/// A node id as the node makes them: `n-` and 16 hex digits.
pub fn node_id(id: &str) -> Result<(), Invalid> {
    let ok = id
        .strip_prefix("n-")
        .is_some_and(|h| h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "node_id",
            format!("{id:?} is not a node id (n- and 16 hex digits)"),
        ))
    }
}

/// Largest agent secret (an API key or token is far smaller).
pub const MAX_SECRET_BYTES: usize = 16 * 1024;
/// Secrets per agent.
pub const MAX_SECRETS: usize = 64;

/// An agent secret's name: an environment variable name (letters, digits and
/// `_`, not starting with a digit, at most 128), and not one the node sets
/// itself (`WARREN_*`, `PATH`, `HOME`, `TERM`, `LANG`).
pub fn secret_name(name: &str) -> Result<(), Invalid> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(invalid(
            "name",
            format!(
                "{name:?} is not an environment variable name (letters, digits and '_', not starting with a digit, at most 128)"
            ),
        ));
    }
    if name.starts_with("WARREN_") || ["PATH", "HOME", "TERM", "LANG"].contains(&name) {
        return Err(invalid(
            "name",
            format!("{name} is set by the node itself for every CLI"),
        ));
    }
    Ok(())
}

/// An agent secret's value: non-empty, at most `MAX_SECRET_BYTES`, no NUL
/// (an environment value cannot hold one) and no newline.
pub fn secret_value(value: &str) -> Result<(), Invalid> {
    if value.is_empty() {
        return Err(invalid("value", "is empty"));
    }
    if value.len() > MAX_SECRET_BYTES {
        return Err(invalid(
            "value",
            format!("{} bytes is over the limit of {MAX_SECRET_BYTES}", value.len()),
        ));
    }
    if value.contains(['\0', '\n', '\r']) {
        return Err(invalid(
            "value",
            "a NUL or line break cannot be in an environment variable's value",
        ));
    }
    Ok(())
}

pub fn persona(p: &str) -> Result<(), Invalid> {
    if p.len() > MAX_PERSONA_BYTES {
        return Err(invalid(
            "persona",
            format!("{} bytes is over the limit of {MAX_PERSONA_BYTES}", p.len()),
        ));
    }
    Ok(())
}

pub fn model(m: &str) -> Result<(), Invalid> {
    if m.is_empty() || m.len() > MAX_MODEL_BYTES || m.chars().any(char::is_control) {
        return Err(invalid(
            "model",
            format!("must be 1-{MAX_MODEL_BYTES} bytes without control characters"),
        ));
    }
    Ok(())
}

/// Container limits: memory 64 MiB..256 GiB, 0.05..256 CPUs, 16..65536 pids.
pub fn resources(r: &console_api::Resources) -> Result<(), Invalid> {
    if let Some(m) = r.memory_mb
        && !(64..=262_144).contains(&m)
    {
        return Err(invalid(
            "resources.memory_mb",
            format!("{m} is not between 64 and 262144"),
        ));
    }
    if let Some(c) = r.cpus
        && !(c.is_finite() && (0.05..=256.0).contains(&c))
    {
        return Err(invalid("resources.cpus", format!("{c} is not between 0.05 and 256")));
    }
    if let Some(p) = r.pids
        && !(16..=65_536).contains(&p)
    {
        return Err(invalid("resources.pids", format!("{p} is not between 16 and 65536")));
    }
    Ok(())
}

pub fn list(field: &'static str, items: &[String]) -> Result<(), Invalid> {
    if items.len() > MAX_LIST_ITEMS {
        return Err(invalid(
            field,
            format!("{} items is over the limit of {MAX_LIST_ITEMS}", items.len()),
        ));
    }
    if let Some(bad) = items
        .iter()
        .find(|s| s.is_empty() || s.len() > 256 || s.chars().any(char::is_control))
    {
        return Err(invalid(
            field,
            format!("item {bad:?} must be 1-256 bytes without control characters"),
        ));
    }
    Ok(())
}

/// A message for `sendMessage`: non-empty, bounded, and free of C0/C1 control
/// characters other than newline (a tab is refused too: TUIs treat it as a key).
pub fn message_text(text: &str) -> Result<(), Invalid> {
    if text.trim().is_empty() {
        return Err(invalid("text", "message is empty"));
    }
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(invalid(
            "text",
            format!("message is {} bytes, over the limit of {MAX_MESSAGE_BYTES}", text.len()),
        ));
    }
    if let Some((i, c)) = text.char_indices().find(|&(_, c)| is_forbidden_control(c)) {
        return Err(invalid(
            "text",
            format!(
                "control character U+{:04X} at byte {i} is not allowed (only newline is)",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Largest mail body.
pub const MAX_MAIL_BYTES: usize = 64 * 1024;
/// Largest mail context.
pub const MAX_MAIL_CONTEXT_BYTES: usize = 4 * 1024;

/// A mail body: 1 byte to 64 KiB, no control characters but newline and tab.
pub fn mail_body(body: &str) -> Result<(), Invalid> {
    text_field("body", body, MAX_MAIL_BYTES, false)
}

pub fn mail_context(context: &str) -> Result<(), Invalid> {
    text_field("context", context, MAX_MAIL_CONTEXT_BYTES, true)
}

fn text_field(field: &'static str, text: &str, max: usize, may_be_empty: bool) -> Result<(), Invalid> {
    if !may_be_empty && text.trim().is_empty() {
        return Err(invalid(field, "is empty"));
    }
    if text.len() > max {
        return Err(invalid(
            field,
            format!("{} bytes is over the limit of {max}", text.len()),
        ));
    }
    if let Some((i, c)) = text.char_indices().find(|&(_, c)| c != '\t' && is_forbidden_control(c)) {
        return Err(invalid(
            field,
            format!("control character U+{:04X} at byte {i} is not allowed", c as u32),
        ));
    }
    Ok(())
}

/// Longest learned approval rule pattern.
pub const MAX_PATTERN_BYTES: usize = 256;
/// Most words in a learned approval rule pattern (a final `*` counts).
pub const MAX_PATTERN_WORDS: usize = 32;
/// Most learned approval rules per workspace.
pub const MAX_LEARNED_RULES: usize = 200;

/// A learned approval rule pattern (`supervision::LearnedRule`): the plain
/// words of one simple command, a final `*` matching any further words.
/// Every word must read the same to the shell lexer as written (no quotes,
/// escapes, operators, redirections, `$`, globs), since rules match the
/// command's words literally. Returns the words before any `*` and whether
/// the pattern ends with one.
pub fn learned_pattern(pattern: &str) -> Result<(Vec<String>, bool), Invalid> {
    const FIELD: &str = "pattern";
    if pattern.trim().is_empty() {
        return Err(invalid(FIELD, "is empty"));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(
            FIELD,
            format!("{} bytes is over the limit of {MAX_PATTERN_BYTES}", pattern.len()),
        ));
    }
    if let Some((i, c)) = pattern.char_indices().find(|&(_, c)| c.is_control()) {
        return Err(invalid(
            FIELD,
            format!("control character U+{:04X} at byte {i} is not allowed", c as u32),
        ));
    }
    if let Some((i, c)) = pattern.char_indices().find(|&(_, c)| c.is_whitespace() && c != ' ') {
        return Err(invalid(
            FIELD,
            format!("whitespace U+{:04X} at byte {i}: only spaces separate words", c as u32),
        ));
    }
    let words: Vec<&str> = pattern.split_whitespace().collect();
    if words.len() > MAX_PATTERN_WORDS {
        return Err(invalid(
            FIELD,
            format!("{} words is over the limit of {MAX_PATTERN_WORDS}", words.len()),
        ));
    }
    let (prefix, open) = match words.split_last() {
        Some((&"*", rest)) => (rest, true),
        _ => (words.as_slice(), false),
    };
    if prefix.is_empty() {
        return Err(invalid(FIELD, "must name a command before `*`"));
    }
    let lexed = supervision::simple_command_words(&prefix.join(" ")).map_err(|why| {
        let hint = if why.contains("glob") {
            " (only a final `*` word is allowed)"
        } else {
            ""
        };
        invalid(
            FIELD,
            format!("{pattern:?} {why}{hint}: a pattern is the words of one simple command"),
        )
    })?;
    if let Some((written, read)) = prefix.iter().zip(&lexed).find(|(w, r)| *w != r) {
        return Err(invalid(
            FIELD,
            format!(
                "word {written:?} reads as {read:?} to the shell: quotes, escapes and operators are not allowed, words are matched literally"
            ),
        ));
    }
    if lexed.len() != prefix.len() {
        return Err(invalid(
            FIELD,
            "quotes, escapes and redirections are not allowed: words are matched literally",
        ));
    }
    Ok((lexed, open))
}

/// A valid pattern as stored: its words joined by single spaces.
pub fn normal_pattern(pattern: &str) -> Result<String, Invalid> {
    let (mut words, open) = learned_pattern(pattern)?;
    if open {
        words.push("*".into());
    }
    Ok(words.join(" "))
}

/// The pattern that learns exactly `command` (a held dialog's command): its
/// words after quote removal, joined by spaces. Refused (naming `learn`) when
/// the command is not one simple command or its words cannot be written as a
/// pattern that matches exactly them (a word with a space, a `*`, a `$`, ...).
pub fn pattern_of_command(command: &str) -> Result<String, Invalid> {
    const FIELD: &str = "learn";
    let words = supervision::simple_command_words(command).map_err(|why| {
        invalid(
            FIELD,
            format!("the held command {command:?} {why}: only one simple command can be learned"),
        )
    })?;
    let pattern = words.join(" ");
    if learned_pattern(&pattern) != Ok((words, false)) {
        return Err(invalid(
            FIELD,
            format!("the held command {command:?} cannot be written as a pattern that matches exactly it"),
        ));
    }
    Ok(pattern)
}

fn is_forbidden_control(c: char) -> bool {
    let u = c as u32;
    c != '\n' && (u < 0x20 || u == 0x7f || (0x80..=0x9f).contains(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learned_patterns() {
        let ok = |p: &str| learned_pattern(p).map(|(w, open)| (w.join(" "), open));
        assert_eq!(ok("cargo build"), Ok(("cargo build".to_string(), false)));
        assert_eq!(ok("  git   push * "), Ok(("git push".to_string(), true)));
        assert_eq!(ok("git show HEAD~1"), Ok(("git show HEAD~1".to_string(), false)));
        let bad: &[(&str, &str)] = &[
            ("", "is empty"),
            ("   ", "is empty"),
            ("*", "before `*`"),
            ("cargo build && rm x", "more than one command"),
            ("cargo test | tee log", "more than one command"),
            ("cargo test; rm x", "more than one command"),
            ("cargo test > out", "redirection"),
            ("echo $(id)", "command substitution"),
            ("echo $HOME", "expansion"),
            ("ls * -l", "only a final `*`"),
            ("cargo\\ build", "matched literally"),
            ("echo 'a'", "matched literally"),
            ("cargo test;", "matched literally"),
            ("cargo\u{a0}build", "only spaces"),
            ("cargo build 2>&1", "redirections"),
            ("cargo\tbuild", "control character"),
            ("cargo\u{7}build", "control character"),
            ("cargo\nbuild", "control character"),
        ];
        for (p, why) in bad {
            let err = learned_pattern(p).expect_err(p);
            assert_eq!(err.field, "pattern", "{p:?}");
            assert!(err.problem.contains(why), "{p:?}: {err}");
        }
        assert!(
            learned_pattern(&"a".repeat(MAX_PATTERN_BYTES + 1))
                .expect_err("long")
                .problem
                .contains("over the limit of 256")
        );
        let many = vec!["w"; MAX_PATTERN_WORDS + 1].join(" ");
        assert!(
            learned_pattern(&many)
                .expect_err("words")
                .problem
                .contains("over the limit of 32")
        );
        assert!(learned_pattern(&vec!["w"; MAX_PATTERN_WORDS].join(" ")).is_ok());
        assert_eq!(normal_pattern(" git  push   * ").as_deref(), Ok("git push *"));
    }

    #[test]
    fn a_held_command_is_learned_as_its_exact_words() {
        assert_eq!(pattern_of_command("cargo build").as_deref(), Ok("cargo build"));
        assert_eq!(pattern_of_command("cargo  'build'").as_deref(), Ok("cargo build"));
        for cmd in [
            "cargo build && rm x",
            "grep 'a b' src",
            "echo '*'",
            "rg '$x'",
            "grep 'fn.*main'",
            "cargo test > out",
            "",
        ] {
            let err = pattern_of_command(cmd).expect_err(cmd);
            assert_eq!(err.field, "learn", "{cmd:?}: {err}");
        }
    }

    #[test]
    fn agent_names() {
        for ok in ["a", "coder", "web-2", "x1-y2"] {
            assert!(agent_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "A", "1abc", "-a", "a-", "a_b", "a b", "é", &"a".repeat(64)] {
            let err = agent_name(bad).expect_err(bad);
            assert_eq!(err.field, "name");
        }
    }

    #[test]
    fn resources_are_bounded() {
        let ok = console_api::Resources {
            memory_mb: Some(512),
            cpus: Some(0.5),
            pids: Some(128),
        };
        assert!(resources(&ok).is_ok());
        assert!(resources(&console_api::Resources::default()).is_ok());
        for (bad, field) in [
            (
                console_api::Resources {
                    memory_mb: Some(1),
                    ..ok.clone()
                },
                "resources.memory_mb",
            ),
            (
                console_api::Resources {
                    cpus: Some(f64::NAN),
                    ..ok.clone()
                },
                "resources.cpus",
            ),
            (
                console_api::Resources {
                    cpus: Some(0.0),
                    ..ok.clone()
                },
                "resources.cpus",
            ),
            (
                console_api::Resources {
                    pids: Some(1),
                    ..ok.clone()
                },
                "resources.pids",
            ),
        ] {
            let e = resources(&bad).expect_err("out of range");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn secrets_are_environment_variables() {
        assert!(secret_name("ANTHROPIC_API_KEY").is_ok());
        assert!(secret_name("_x1").is_ok());
        for bad in ["", "1KEY", "MY-KEY", "A B", "KÉY", &"K".repeat(129)] {
            let e = secret_name(bad).expect_err(bad);
            assert_eq!(e.field, "name", "{bad}");
        }
        for reserved in ["WARREN_TOKEN", "PATH", "HOME"] {
            assert!(
                secret_name(reserved)
                    .expect_err(reserved)
                    .problem
                    .contains("set by the node")
            );
        }
        assert!(secret_value("sk-ant-123").is_ok());
        let e = secret_value(&"x".repeat(1 << 20)).expect_err("1 MB");
        assert_eq!(e.to_string(), "value: 1048576 bytes is over the limit of 16384");
        assert!(secret_value("").is_err());
        assert!(secret_value("a\nb").is_err());
        assert!(secret_value("a\0b").is_err());
    }

    #[test]
    fn harness_names_are_checked() {
        assert!(harness("fake").is_ok());
        let err = harness("vim").expect_err("unknown");
        assert!(err.to_string().contains("unknown harness \"vim\""));
    }

    #[test]
    fn message_text_refuses_controls_but_keeps_newlines_and_unicode() {
        assert!(message_text("hello\nworld ✓ ünïcode").is_ok());
        for bad in [
            "a\x1bb",
            "a\rb",
            "tab\there",
            "nul\0",
            "c1\u{85}",
            "del\x7f",
            "bell\x07",
        ] {
            let err = message_text(bad).expect_err(bad);
            assert_eq!(err.field, "text");
            assert!(err.problem.contains("control character"), "{err}");
        }
        assert!(message_text("   ").is_err());
        assert!(
            message_text(&"x".repeat(MAX_MESSAGE_BYTES + 1))
                .unwrap_err()
                .problem
                .contains("over the limit")
        );
    }
}
