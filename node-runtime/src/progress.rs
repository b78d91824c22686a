//! Progress of long work (a guest image built on a first `conversation.start`)
//! for whoever is waiting on it. The API sets a sink for the request it is
//! answering (a task-local, so nothing in between has to carry it); the work
//! reports lines into it; the connection turns them into `request.progress`
//! notifications. Reports never wait: when the sink is full they are dropped.
//! What a first run builds, and roughly how long that takes, is here too.

use std::future::Future;
use std::time::Instant;

use tokio::sync::mpsc;

/// Progress lines buffered per request before new ones are dropped.
pub const SINK_CAPACITY: usize = 64;

/// Where one request's progress goes.
#[derive(Clone)]
pub struct Sink {
    tx: mpsc::Sender<Report>,
    started: Instant,
}

/// One progress line and the time since the request began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub message: String,
    pub elapsed_ms: u64,
}

tokio::task_local! {
    static SINK: Sink;
}

impl Sink {
    /// A sink and the receiving end the caller forwards from.
    pub fn new() -> (Sink, mpsc::Receiver<Report>) {
        let (tx, rx) = mpsc::channel(SINK_CAPACITY);
        (
            Sink {
                tx,
                started: Instant::now(),
            },
            rx,
        )
    }

    /// Runs `f` with this sink as the current request's.
    pub async fn scope<F: Future>(self, f: F) -> F::Output {
        SINK.scope(self, f).await
    }
}

/// Reports a line to the current request's sink, if it has one. Never waits.
pub fn report(message: impl Into<String>) {
    let _ = SINK.try_with(|s| {
        let _ = s.tx.try_send(Report {
            message: message.into(),
            elapsed_ms: s.started.elapsed().as_millis() as u64,
        });
    });
}

/// Roughly how long a cold build of a harness's guest image takes on a
/// 2-core machine (measured: base 30-90 s, fake 12 s, claude 54 s, aider
/// 140-170 s), as a person would be told.
pub fn build_estimate(harness: &str) -> &'static str {
    match harness {
        "fake" => "about 15 s",
        "claude" | "codex" => "about 1 min",
        "aider" => "about 3 min",
        _ => "a few minutes",
    }
}

/// What a first `conversation.start` of `harness` will build, given which
/// images the engine has: `None` when nothing needs building.
pub fn first_run_plan(harness: &str, base_present: bool, guest_present: bool) -> Option<String> {
    match (base_present, guest_present) {
        (true, true) => None,
        (true, false) => Some(format!(
            "the first {harness} conversation builds its guest image ({})",
            build_estimate(harness)
        )),
        (false, _) => Some(format!(
            "the first {harness} conversation builds the Debian base image (about 1-2 min, once) and its guest image ({})",
            build_estimate(harness)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reports_reach_the_scope_s_sink_only() {
        report("nobody is listening");
        let (sink, mut rx) = Sink::new();
        sink.scope(async {
            report("step 1");
            report(String::from("step 2"));
        })
        .await;
        assert_eq!(rx.recv().await.map(|r| r.message), Some("step 1".into()));
        assert_eq!(rx.recv().await.map(|r| r.message), Some("step 2".into()));
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_full_sink_drops_instead_of_waiting() {
        let (sink, mut rx) = Sink::new();
        sink.scope(async {
            for i in 0..SINK_CAPACITY + 10 {
                report(format!("line {i}"));
            }
        })
        .await;
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, SINK_CAPACITY);
    }

    #[test]
    fn first_runs_say_what_they_build() {
        assert_eq!(first_run_plan("fake", true, true), None);
        let p = first_run_plan("claude", true, false).expect("a guest build");
        assert!(p.contains("guest image (about 1 min)") && !p.contains("base"), "{p}");
        let p = first_run_plan("aider", false, false).expect("base and guest");
        assert!(p.contains("Debian base image") && p.contains("about 3 min"), "{p}");
    }
}
