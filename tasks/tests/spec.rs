//! `task.start` validation: each bad input names its field; the wire shapes parse.

use tasks::spec::{DEFAULT_MAX_REPAIRS, MAX_COMMAND_BYTES, MAX_GOAL_BYTES};
use tasks::{Authority, DeciderSpec, Facts, ReviewSpec, TaskSpec, validate};

struct Agents;

impl Facts for Agents {
    fn agent_exists(&self, name: &str) -> bool {
        matches!(name, "worker" | "reviewer" | "decider" | "bare")
    }
    fn has_workspace(&self, name: &str) -> bool {
        name != "bare"
    }
}

fn good() -> TaskSpec {
    TaskSpec {
        agent: "worker".into(),
        goal: "fix the bug".into(),
        acceptance: vec!["cargo test".into()],
        review: Some(ReviewSpec {
            agent: "reviewer".into(),
        }),
        decider: Some(DeciderSpec {
            agent: "decider".into(),
            authority: Authority::Hybrid,
            timeout_secs: None,
        }),
        max_repairs: Some(3),
        deadline_secs: Some(600),
    }
}

fn field_of(spec: &TaskSpec) -> String {
    match validate(spec, &Agents) {
        Ok(()) => "ok".into(),
        Err(e) => {
            assert!(!e.message.is_empty(), "{e:?} has no message");
            e.field
        }
    }
}

#[test]
fn each_bad_input_names_its_field() {
    type Edit = fn(&mut TaskSpec);
    let table: &[(&str, Edit, &str)] = &[
        ("good", |_| {}, "ok"),
        ("unknown agent", |s| s.agent = "ghost".into(), "agent"),
        ("empty agent", |s| s.agent = " ".into(), "agent"),
        ("no workspace", |s| s.agent = "bare".into(), "agent"),
        ("empty goal", |s| s.goal = " \n\t".into(), "goal"),
        ("goal too long", |s| s.goal = "x".repeat(MAX_GOAL_BYTES + 1), "goal"),
        ("goal at limit", |s| s.goal = "x".repeat(MAX_GOAL_BYTES), "ok"),
        (
            "nothing verifies",
            |s| {
                s.acceptance.clear();
                s.review = None;
            },
            "acceptance",
        ),
        ("review only", |s| s.acceptance.clear(), "ok"),
        ("checks only", |s| s.review = None, "ok"),
        (
            "101 commands",
            |s| s.acceptance = vec!["true".into(); 101],
            "acceptance",
        ),
        ("100 commands", |s| s.acceptance = vec!["true".into(); 100], "ok"),
        (
            "empty command",
            |s| s.acceptance = vec!["true".into(), "true".into(), "true".into(), "  ".into()],
            "acceptance[3]",
        ),
        (
            "command too long",
            |s| s.acceptance = vec!["x".repeat(MAX_COMMAND_BYTES + 1)],
            "acceptance[0]",
        ),
        (
            "NUL in command",
            |s| s.acceptance = vec!["a\0b".into()],
            "acceptance[0]",
        ),
        ("max_repairs 21", |s| s.max_repairs = Some(21), "max_repairs"),
        ("max_repairs 20", |s| s.max_repairs = Some(20), "ok"),
        ("max_repairs 0", |s| s.max_repairs = Some(0), "ok"),
        ("deadline 59", |s| s.deadline_secs = Some(59), "deadline_secs"),
        ("deadline 60", |s| s.deadline_secs = Some(60), "ok"),
        ("deadline 0", |s| s.deadline_secs = Some(0), "deadline_secs"),
        ("deadline huge", |s| s.deadline_secs = Some(u64::MAX), "deadline_secs"),
        (
            "own reviewer",
            |s| s.review = Some(ReviewSpec { agent: "worker".into() }),
            "review.agent",
        ),
        (
            "unknown reviewer",
            |s| s.review = Some(ReviewSpec { agent: "ghost".into() }),
            "review.agent",
        ),
        (
            "empty reviewer",
            |s| s.review = Some(ReviewSpec { agent: "".into() }),
            "review.agent",
        ),
        (
            "own decider",
            |s| {
                s.decider = Some(DeciderSpec {
                    agent: "worker".into(),
                    authority: Authority::Policy,
                    timeout_secs: None,
                })
            },
            "decider.agent",
        ),
        (
            "unknown decider",
            |s| {
                s.decider = Some(DeciderSpec {
                    agent: "ghost".into(),
                    authority: Authority::Decider,
                    timeout_secs: None,
                })
            },
            "decider.agent",
        ),
        (
            "decider's time limit too short",
            |s| {
                s.decider = Some(DeciderSpec {
                    agent: "reviewer".into(),
                    authority: Authority::Hybrid,
                    timeout_secs: Some(5),
                })
            },
            "decider.timeout_secs",
        ),
        (
            "reviewer decides too",
            |s| {
                s.decider = Some(DeciderSpec {
                    agent: "reviewer".into(),
                    authority: Authority::Hybrid,
                    timeout_secs: None,
                })
            },
            "ok",
        ),
    ];
    for (name, edit, want) in table {
        let mut s = good();
        edit(&mut s);
        assert_eq!(field_of(&s), *want, "case {name:?}");
    }
}

#[test]
fn invalid_displays_field_then_message() {
    let mut s = good();
    s.max_repairs = Some(99);
    let e = validate(&s, &Agents).expect_err("99 repairs");
    assert_eq!(e.to_string(), "max_repairs: 99 is over the limit of 20");
}

#[test]
fn start_params_parse_as_api_md_says() {
    let s: TaskSpec = serde_json::from_str(
        r#"{"agent":"worker","goal":"g","acceptance":["make test"],"review":{"agent":"reviewer"},
            "decider":{"agent":"decider","authority":"decider"},"max_repairs":5,"deadline_secs":120}"#,
    )
    .expect("full spec");
    assert_eq!(
        s.review,
        Some(ReviewSpec {
            agent: "reviewer".into()
        })
    );
    assert_eq!(s.decider.as_ref().map(|d| d.authority), Some(Authority::Decider));
    assert_eq!((s.max_repairs, s.deadline_secs), (Some(5), Some(120)));

    let s: TaskSpec =
        serde_json::from_str(r#"{"agent":"w","goal":"g","acceptance":["x"],"review":false}"#).expect("false");
    assert_eq!(s.review, None);
    assert_eq!(s.max_repairs_or_default(), DEFAULT_MAX_REPAIRS);
    let s: TaskSpec = serde_json::from_str(r#"{"agent":"w","goal":"g","review":null}"#).expect("null");
    assert_eq!((s.review, s.acceptance.len()), (None, 0));
    let s: TaskSpec =
        serde_json::from_str(r#"{"agent":"w","goal":"g","decider":{"agent":"d"}}"#).expect("default authority");
    assert_eq!(s.decider.map(|d| d.authority), Some(Authority::Hybrid));

    for bad in [
        r#"{"agent":"w","goal":"g","review":true}"#,
        r#"{"agent":"w","goal":"g","review":{"agent":"r","extra":1}}"#,
        r#"{"agent":"w","goal":"g","surprise":1}"#,
        r#"{"agent":"w","goal":"g","decider":{"agent":"d","authority":"human"}}"#,
        r#"{"agent":"w","goal":"g","max_repairs":-1}"#,
    ] {
        assert!(serde_json::from_str::<TaskSpec>(bad).is_err(), "{bad} parsed");
    }
}

#[test]
fn authority_policy_never_asks_the_decider() {
    assert!(!Authority::Policy.asks_decider());
    assert!(Authority::Hybrid.asks_decider());
    assert!(Authority::Decider.asks_decider());
}
