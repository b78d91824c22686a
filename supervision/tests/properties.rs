//! Property tests for the guarantees that must hold for every input.

mod common;

use common::*;
use proptest::prelude::*;
use supervision::{
    AgentOverride, PolicySource, SupervisionConfig, Verdict, approve_option, command_in_scope, deny_option,
    escalation_in, is_standing,
};

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("cargo".to_string()),
        Just("git".to_string()),
        Just("test".to_string()),
        Just("status".to_string()),
        Just("push".to_string()),
        Just("-f".to_string()),
        Just("rm".to_string()),
        Just("-rf".to_string()),
        Just("cat".to_string()),
        Just("../..".to_string()),
        Just("/etc/passwd".to_string()),
        Just("&&".to_string()),
        Just("|".to_string()),
        Just(";".to_string()),
        Just(">".to_string()),
        Just("src/lib.rs".to_string()),
        "[a-z]{1,6}",
    ]
}

fn command() -> impl Strategy<Value = String> {
    proptest::collection::vec(word(), 1..8).prop_map(|w| w.join(" "))
}

fn option_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Yes".to_string()),
        Just("No".to_string()),
        Just("Yes, and always allow access to /w from this project".to_string()),
        Just("Yes, and switch to auto mode".to_string()),
        Just("Yes, allow all edits during this session".to_string()),
        Just("Yes, and don't ask again for this command".to_string()),
        Just("No, and remember this choice".to_string()),
        Just("Yes, allow once".to_string()),
        Just("(D)on't ask again".to_string()),
        "(Yes|No|Allow|Deny)[ ,a-z]{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn switched_off_always_holds(cmd in command(), master in any::<bool>(), opted in proptest::option::of(any::<bool>())) {
        prop_assume!(!(master && opted == Some(true)));
        let config = SupervisionConfig { enabled: master, ..SupervisionConfig::default() };
        let agent = opted.map(|enabled| AgentOverride { enabled, ..AgentOverride::default() });
        let d = decide_with(&claude_bash(&cmd), &config, agent.as_ref(), &[]);
        prop_assert_eq!(d.verdict, Verdict::Hold);
        prop_assert_eq!(d.source, PolicySource::SupervisionOff);
        prop_assert!(d.keys.is_empty());
    }

    #[test]
    fn never_approves_a_vetoed_or_unscoped_command(cmd in command()) {
        let d = decide(&claude_bash(&cmd));
        if d.verdict == Verdict::Approve {
            prop_assert!(escalation_in(&cmd).is_none(), "{}", cmd);
            prop_assert!(d.repo_scoped);
            prop_assert!(command_in_scope(&cmd, Some(WORKTREE), &scope(), &fs()).is_ok());
            prop_assert_eq!(d.keys, vec!["1".to_string()]);
        }
    }

    #[test]
    fn never_picks_a_standing_option(options in proptest::collection::vec(option_text(), 0..6)) {
        for pick in [approve_option(&options), deny_option(&options)].into_iter().flatten() {
            prop_assert!(pick < options.len());
            prop_assert!(!is_standing(&options[pick]), "{:?}", options[pick]);
        }
        if let (Some(a), Some(d)) = (approve_option(&options), deny_option(&options)) {
            prop_assert_ne!(a, d);
        }
    }

    #[test]
    fn substitution_is_never_in_scope(pre in command(), post in command(), which in 0usize..4) {
        let wrapped = match which {
            0 => format!("{pre} $({post})"),
            1 => format!("{pre} `{post}`"),
            2 => format!("{pre} <({post})"),
            _ => format!("{pre} >({post})"),
        };
        prop_assert!(command_in_scope(&wrapped, None, &scope(), &fs()).is_err());
    }

    #[test]
    fn an_unknown_program_anywhere_spoils_the_chain(name in "[a-z]{2,8}", sep in prop_oneof![Just("&&"), Just("||"), Just(";"), Just("|")]) {
        prop_assume!(!supervision::scope::ALLOWED_PROGRAMS.contains(&name.as_str()));
        let cmd = format!("cargo test {} {} x", sep, name);
        prop_assert!(command_in_scope(&cmd, None, &scope(), &fs()).is_err());
    }

    #[test]
    fn climbing_out_is_out(depth in 3usize..8, tail in "[a-z]{1,8}") {
        let path = format!("{}{tail}", "../".repeat(depth));
        let cmd = format!("cat {path}");
        prop_assert!(command_in_scope(&cmd, None, &scope(), &fs()).is_err());
    }
}
