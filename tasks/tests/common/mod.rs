//! Shared test helpers: a task driven through inputs with its log kept, replayable.
#![allow(dead_code, unreachable_pub)]

use tasks::state::Verdict;
use tasks::{CheckOutcome, Decision, Effect, Input, Placement, Refused, Task, TaskEvent, TaskSpec, create, replay};

pub const BASELINE: &str = "1111111111111111111111111111111111111111";
pub const HEAD: &str = "2222222222222222222222222222222222222222";
pub const T0: u64 = 1_000_000;

pub fn spec(acceptance: &[&str], reviewer: Option<&str>) -> TaskSpec {
    TaskSpec {
        agent: "worker".into(),
        goal: "Make the tests pass.".into(),
        acceptance: acceptance.iter().map(|s| s.to_string()).collect(),
        review: reviewer.map(|a| tasks::ReviewSpec { agent: a.into() }),
        decider: None,
        max_repairs: Some(2),
        deadline_secs: Some(3600),
    }
}

/// A task with its log of `(event, ts)`, driven like the node would.
pub struct H {
    pub task: Task,
    pub log: Vec<(TaskEvent, u64)>,
    pub now: u64,
}

impl H {
    pub fn new(spec: TaskSpec) -> H {
        let placement = Placement {
            id: "t1".into(),
            conversation: "c1".into(),
            branch: "warren/t1".into(),
            baseline: BASELINE.into(),
        };
        let (task, d) = create(&spec, placement, T0);
        let log = d.events.into_iter().map(|e| (e, T0)).collect();
        H { task, log, now: T0 }
    }

    pub fn step(&mut self, input: Input) -> Result<Decision, Refused> {
        let before = self.task.clone();
        let r = self.task.step(input, self.now);
        match &r {
            Ok(d) => self.log.extend(d.events.iter().map(|e| (e.clone(), self.now))),
            Err(_) => assert_eq!(self.task, before, "a refused input changed the task"),
        }
        r
    }

    pub fn ok(&mut self, input: Input) -> Decision {
        let name = input.name();
        match self.step(input) {
            Ok(d) => d,
            Err(e) => panic!("{name} refused: {e}"),
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }

    /// Replays the log through JSON: must equal the live task.
    pub fn assert_fold(&self) {
        let json: Vec<(String, u64)> = self
            .log
            .iter()
            .map(|(e, ts)| (serde_json::to_string(e).expect("encode"), *ts))
            .collect();
        let decoded: Vec<(TaskEvent, u64)> = json
            .iter()
            .map(|(s, ts)| (serde_json::from_str(s).expect("decode"), *ts))
            .collect();
        let replayed = replay(decoded.iter().map(|(e, ts)| (e, *ts))).expect("replay");
        assert_eq!(replayed, self.task, "fold != live");
    }

    pub fn results(&self, pass: &[bool]) -> Vec<CheckOutcome> {
        self.task
            .acceptance
            .iter()
            .zip(pass)
            .map(|(c, p)| CheckOutcome {
                command: c.clone(),
                exit_code: Some(if *p { 0 } else { 1 }),
                output_tail: if *p { String::new() } else { format!("{c}: boom") },
                ms: 5,
            })
            .collect()
    }

    pub fn checks(&mut self, pass: &[bool]) -> Decision {
        let results = self.results(pass);
        let round = self.task.round;
        self.ok(Input::ChecksFinished {
            round,
            results,
            head: Some(HEAD.into()),
        })
    }

    pub fn verdict(&mut self, verdict: Verdict, notes: &str) -> Decision {
        let round = self.task.round;
        self.ok(Input::ReviewVerdict {
            round,
            verdict,
            notes: notes.into(),
        })
    }

    pub fn commit_done(&mut self) -> Decision {
        let round = self.task.round;
        self.ok(Input::CommitDone {
            round,
            head: HEAD.into(),
        })
    }

    pub fn event_kinds(d: &Decision) -> Vec<&'static str> {
        d.events.iter().map(TaskEvent::kind).collect()
    }
}

pub fn effect_names(d: &Decision) -> Vec<&'static str> {
    d.effects.iter().map(Effect::name).collect()
}

pub fn event_names(d: &Decision) -> Vec<&'static str> {
    d.events.iter().map(TaskEvent::kind).collect()
}
