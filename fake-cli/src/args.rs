//! Command-line flags of the fake CLI, parsed without IO.

use std::path::PathBuf;

/// How the session is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionChoice {
    /// A new session with a random id.
    New,
    /// A new session with this id (`--session-id`).
    NewWithId(String),
    /// Continue an existing session (`--resume`).
    Resume(String),
}

/// Parsed flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) session_dir: Option<PathBuf>,
    pub(crate) session: SessionChoice,
    pub(crate) rules: Option<PathBuf>,
    pub(crate) think_ms: u64,
    pub(crate) dialog_guard_ms: u64,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            session_dir: None,
            session: SessionChoice::New,
            rules: None,
            think_ms: 30,
            dialog_guard_ms: 0,
        }
    }
}

/// A bad command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgError {
    #[error("unknown flag: {0}")]
    UnknownFlag(String),
    #[error("unexpected argument: {0}")]
    Unexpected(String),
    #[error("flag {0} needs a value")]
    MissingValue(String),
    #[error("flag {flag} needs a whole number of milliseconds, got {value:?}")]
    BadNumber { flag: String, value: String },
    #[error("--session-id and --resume cannot be used together")]
    Conflict,
}

/// Parses the flags (program name excluded). Accepts `--flag VALUE` and `--flag=VALUE`.
pub(crate) fn parse_args(args: &[String]) -> Result<Args, ArgError> {
    let mut out = Args::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if !flag.starts_with('-') {
            return Err(ArgError::Unexpected(arg.clone()));
        }
        if !matches!(
            flag,
            "--session-dir" | "--session-id" | "--resume" | "--rules" | "--think-ms" | "--dialog-guard-ms"
        ) {
            return Err(ArgError::UnknownFlag(flag.to_string()));
        }
        let value = match inline {
            Some(v) => v,
            None => iter
                .next()
                .cloned()
                .ok_or_else(|| ArgError::MissingValue(flag.to_string()))?,
        };
        match flag {
            "--session-dir" => out.session_dir = Some(PathBuf::from(value)),
            "--session-id" | "--resume" => {
                if out.session != SessionChoice::New {
                    return Err(ArgError::Conflict);
                }
                out.session = if flag == "--resume" {
                    SessionChoice::Resume(value)
                } else {
                    SessionChoice::NewWithId(value)
                };
            }
            "--rules" => out.rules = Some(PathBuf::from(value)),
            "--think-ms" => out.think_ms = millis(flag, &value)?,
            _ => out.dialog_guard_ms = millis(flag, &value)?,
        }
    }
    Ok(out)
}

fn millis(flag: &str, value: &str) -> Result<u64, ArgError> {
    value.parse().map_err(|_| ArgError::BadNumber {
        flag: flag.to_string(),
        value: value.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, ArgError> {
        parse_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults() {
        assert_eq!(parse(&[]).unwrap(), Args::default());
    }

    #[test]
    fn all_flags() {
        let a = parse(&[
            "--session-dir",
            "/s",
            "--resume=abc",
            "--rules",
            "r.json",
            "--think-ms",
            "5",
            "--dialog-guard-ms=200",
        ])
        .unwrap();
        assert_eq!(
            a,
            Args {
                session_dir: Some("/s".into()),
                session: SessionChoice::Resume("abc".into()),
                rules: Some("r.json".into()),
                think_ms: 5,
                dialog_guard_ms: 200,
            }
        );
        assert_eq!(
            parse(&["--session-id", "x"]).unwrap().session,
            SessionChoice::NewWithId("x".into())
        );
    }

    #[test]
    fn errors() {
        assert_eq!(parse(&["--nope"]), Err(ArgError::UnknownFlag("--nope".into())));
        assert_eq!(parse(&["--nope=1"]), Err(ArgError::UnknownFlag("--nope".into())));
        assert_eq!(parse(&["-x"]), Err(ArgError::UnknownFlag("-x".into())));
        assert_eq!(parse(&["stray"]), Err(ArgError::Unexpected("stray".into())));
        assert_eq!(parse(&["--rules"]), Err(ArgError::MissingValue("--rules".into())));
        assert!(matches!(
            parse(&["--think-ms", "fast"]),
            Err(ArgError::BadNumber { .. })
        ));
        assert_eq!(parse(&["--session-id", "a", "--resume", "a"]), Err(ArgError::Conflict));
        assert!(ArgError::UnknownFlag("--nope".into()).to_string().contains("--nope"));
    }
}
