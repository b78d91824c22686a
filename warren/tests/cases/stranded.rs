// "A conversation is never stranded" with the fake CLI, included by one test
// binary per runtime (durable_home.rs, docker_durable_home.rs); the real
// Claude Code tier runs the same scenarios (cases/claude.rs).

fn fake_cli() -> support::stranded::Cli {
    support::stranded::Cli {
        harness: "fake",
        runtime: RUNTIME,
        config: Box::new(|program| {
            let mut toml = String::from("[harnesses.fake]\n");
            if let Some(p) = program {
                toml.push_str(&format!("program = {:?}\n", p.display().to_string()));
            }
            if RUNTIME == "docker" {
                // A configured image, so `warren up` can check the program in it.
                toml.push_str(&format!("image = {:?}\n", support::guest_image("fake")));
            }
            toml
        }),
        reply_prefix: |text| format!("echo: {text}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_fake_program_is_named_and_the_fix_starts_fresh() {
    support::stranded::a_wrong_program_is_named_and_the_fix_starts_fresh(&fake_cli()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_fake_session_fails_resume_and_continue_fresh_recovers() {
    support::stranded::a_deleted_session_fails_resume_and_continue_fresh_recovers(&fake_cli()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_without_an_adapter_is_refused_at_create() {
    support::stranded::a_harness_without_an_adapter_is_refused(RUNTIME).await;
}
