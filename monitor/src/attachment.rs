//! `monitor.attach`: the wire shape ([`AttachmentSpec`]) and [`validate`],
//! which refuses what cannot work and fills in the defaults.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::speaker::Speaker;
use crate::text::{is_agent_name, is_agent_ref, is_control};

/// Longest keyword, in bytes.
pub const MAX_KEYWORD_BYTES: usize = 256;
/// Most keywords in one trigger.
pub const MAX_KEYWORDS: usize = 10_000;
/// Most keyword bytes in one trigger, all keywords together: bounds the
/// automaton (10,000 keywords of 256 bytes would build for seconds into
/// ~50 MB; 256 KiB builds in well under a second into a few MB).
pub const MAX_KEYWORDS_TOTAL_BYTES: usize = 256 * 1024;
/// Longest conversation id in a conversation-scoped target, in bytes.
pub const MAX_CONVERSATION_ID_BYTES: usize = 128;

/// Human-less wake->inject cycles before the breaker trips (the platform
/// default of seed 002 section 12).
pub const DEFAULT_MAX_CYCLES: u32 = 5;
/// Rate backstop: at most this many wakes ...
pub const DEFAULT_MAX_WAKES: u32 = 20;
/// ... within this many minutes.
pub const DEFAULT_WINDOW_MINS: u32 = 10;

const MAX_CYCLES_RANGE: (u64, u64) = (1, 100);
const MAX_WAKES_RANGE: (u64, u64) = (1, 1000);
const WINDOW_MINS_RANGE: (u64, u64) = (1, 1440);

const SPEAKER_LIST: &str = "human, agent, tool, system, monitor:NAME";

// ---- the wire shape -------------------------------------------------------

/// The params of `monitor.attach`, as a client sends them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentSpec {
    /// The monitor agent (homed on this node).
    pub monitor: String,
    pub target: TargetSpec,
    pub trigger: TriggerSpec,
    /// May the monitor advise (may-inject)? Default true; false is watch-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inject: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerSpec>,
}

/// `{agent}` or `{conversation}`: exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// `NAME` or `NAME@NODE`: every conversation the agent starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// One conversation, for one-off shepherding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    pub keywords: Vec<KeywordSpec>,
    /// Default false: matching ignores case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
    /// Default: every speaker but this monitor's own advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speakers: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeywordSpec {
    pub text: String,
    /// Default `substring`.
    #[serde(default)]
    pub mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wakes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_mins: Option<u64>,
}

/// How a keyword must occur.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Anywhere, even inside a longer token.
    #[default]
    Substring,
    /// Only delimited: neither preceded nor followed by a word character
    /// (Unicode alphanumeric or `_`).
    Word,
}

// ---- the validated attachment ---------------------------------------------

/// A valid attachment with every default filled in. Built only by
/// [`validate`]; [`Attachment::spec`] gives the normalized wire shape back
/// (what the node stores in the monitor's definition and re-validates on load).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    monitor: String,
    target: Target,
    trigger: TriggerConfig,
    inject: bool,
    breaker: BreakerConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// `NAME` or `NAME@NODE`.
    Agent(String),
    Conversation(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TriggerConfig {
    /// Distinct keywords in the order given (exact duplicates dropped; under
    /// [`Case::Insensitive`] also those differing only in ASCII case).
    pub keywords: Vec<Keyword>,
    pub case: Case,
    pub speakers: Speakers,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Keyword {
    pub text: String,
    pub mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    Insensitive,
    Sensitive,
}

/// The speaker filter. A monitor's own advice is never matched either way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Speakers {
    /// Every speaker (other monitors' advice included) but this monitor.
    All,
    /// Only these (distinct, in the order given).
    Only(Vec<Speaker>),
}

/// The breaker's thresholds, in range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerConfig {
    /// Trip when this many human-less wake->inject cycles have completed.
    pub max_cycles: u32,
    /// Trip instead of waking a (max_wakes + 1)th time within `window_mins`.
    pub max_wakes: u32,
    pub window_mins: u32,
}

impl Default for BreakerConfig {
    fn default() -> BreakerConfig {
        BreakerConfig {
            max_cycles: DEFAULT_MAX_CYCLES,
            max_wakes: DEFAULT_MAX_WAKES,
            window_mins: DEFAULT_WINDOW_MINS,
        }
    }
}

impl BreakerConfig {
    pub fn window_ms(&self) -> u64 {
        u64::from(self.window_mins) * 60_000
    }
}

impl Attachment {
    /// The monitor agent's name.
    pub fn monitor(&self) -> &str {
        &self.monitor
    }
    pub fn target(&self) -> &Target {
        &self.target
    }
    pub fn trigger(&self) -> &TriggerConfig {
        &self.trigger
    }
    /// Whether the monitor may advise (false: watch-only).
    pub fn inject(&self) -> bool {
        self.inject
    }
    pub fn breaker(&self) -> BreakerConfig {
        self.breaker
    }
    /// The speaker string of this monitor's own advice: `monitor:NAME`.
    pub fn own_speaker(&self) -> String {
        format!("monitor:{}", self.monitor)
    }

    /// The normalized wire shape: every default written out, so that
    /// `validate(a.spec()) == Ok(a)`.
    pub fn spec(&self) -> AttachmentSpec {
        let (agent, conversation) = match &self.target {
            Target::Agent(a) => (Some(a.clone()), None),
            Target::Conversation(c) => (None, Some(c.clone())),
        };
        AttachmentSpec {
            monitor: self.monitor.clone(),
            target: TargetSpec { agent, conversation },
            trigger: TriggerSpec {
                keywords: self
                    .trigger
                    .keywords
                    .iter()
                    .map(|k| KeywordSpec {
                        text: k.text.clone(),
                        mode: k.mode,
                    })
                    .collect(),
                case_sensitive: Some(self.trigger.case == Case::Sensitive),
                speakers: match &self.trigger.speakers {
                    Speakers::All => None,
                    Speakers::Only(list) => Some(list.iter().map(Speaker::to_string).collect()),
                },
            },
            inject: Some(self.inject),
            breaker: Some(BreakerSpec {
                max_cycles: Some(self.breaker.max_cycles.into()),
                max_wakes: Some(self.breaker.max_wakes.into()),
                window_mins: Some(self.breaker.window_mins.into()),
            }),
        }
    }
}

// ---- validation ------------------------------------------------------------

/// Check a `monitor.attach` request and fill in its defaults. The first
/// broken rule is returned, naming its field (`trigger.keywords[3].text`).
///
/// What it cannot see, the node checks: that the monitor and target exist,
/// that a conversation target is not one of the monitor's own conversations,
/// and that `NAME@NODE` naming this very node is folded to `NAME` first (so
/// `m@this-node` is caught as the monitor targeting itself).
pub fn validate(spec: &AttachmentSpec) -> Result<Attachment, Error> {
    if !is_agent_name(&spec.monitor) {
        return Err(Error::invalid(
            "monitor",
            format!(
                "{:?} is not a valid agent name (1-63 chars of a-z, 0-9 and '-', starting with a letter, not ending with '-')",
                spec.monitor
            ),
        ));
    }
    let target = target(&spec.monitor, &spec.target)?;
    let case = match spec.trigger.case_sensitive {
        Some(true) => Case::Sensitive,
        Some(false) | None => Case::Insensitive,
    };
    let keywords = keywords(&spec.trigger.keywords, case)?;
    let speakers = speakers(&spec.monitor, spec.trigger.speakers.as_deref())?;
    let breaker = breaker(spec.breaker.unwrap_or_default())?;
    Ok(Attachment {
        monitor: spec.monitor.clone(),
        target,
        trigger: TriggerConfig {
            keywords,
            case,
            speakers,
        },
        inject: spec.inject.unwrap_or(true),
        breaker,
    })
}

fn target(monitor: &str, t: &TargetSpec) -> Result<Target, Error> {
    match (&t.agent, &t.conversation) {
        (Some(_), Some(_)) => Err(Error::invalid(
            "target",
            "names both an agent and a conversation; give exactly one",
        )),
        (None, None) => Err(Error::invalid(
            "target",
            "names neither an agent nor a conversation; give exactly one",
        )),
        (Some(agent), None) => {
            if !is_agent_ref(agent) {
                return Err(Error::invalid(
                    "target.agent",
                    format!("{agent:?} is not an agent (NAME or NAME@NODE)"),
                ));
            }
            if agent == monitor {
                return Err(Error::invalid(
                    "target.agent",
                    format!("a monitor cannot monitor itself ({agent:?})"),
                ));
            }
            Ok(Target::Agent(agent.clone()))
        }
        (None, Some(conv)) => {
            let ok = !conv.is_empty()
                && conv.len() <= MAX_CONVERSATION_ID_BYTES
                && conv.bytes().all(|b| b.is_ascii_graphic());
            if !ok {
                return Err(Error::invalid(
                    "target.conversation",
                    format!(
                        "{conv:?} is not a conversation id (1-{MAX_CONVERSATION_ID_BYTES} printable ASCII characters)"
                    ),
                ));
            }
            Ok(Target::Conversation(conv.clone()))
        }
    }
}

fn keywords(specs: &[KeywordSpec], case: Case) -> Result<Vec<Keyword>, Error> {
    if specs.is_empty() {
        return Err(Error::invalid("trigger.keywords", "at least one keyword"));
    }
    if specs.len() > MAX_KEYWORDS {
        return Err(Error::invalid(
            "trigger.keywords",
            format!("{} keywords is over the limit of {MAX_KEYWORDS}", specs.len()),
        ));
    }
    let mut seen = HashSet::with_capacity(specs.len());
    let mut out = Vec::with_capacity(specs.len());
    let mut total = 0usize;
    for (i, k) in specs.iter().enumerate() {
        let field = || format!("trigger.keywords[{i}].text");
        if k.text.is_empty() {
            return Err(Error::invalid(field(), "is empty"));
        }
        if k.text.len() > MAX_KEYWORD_BYTES {
            return Err(Error::invalid(
                field(),
                format!("{} bytes is over the limit of {MAX_KEYWORD_BYTES}", k.text.len()),
            ));
        }
        total += k.text.len();
        if total > MAX_KEYWORDS_TOTAL_BYTES {
            return Err(Error::invalid(
                "trigger.keywords",
                format!(
                    "more than {MAX_KEYWORDS_TOTAL_BYTES} bytes of keywords in total (the limit is reached at keyword {i})"
                ),
            ));
        }
        if k.text.trim().is_empty() {
            return Err(Error::invalid(field(), "is only whitespace"));
        }
        if let Some((at, c)) = k.text.char_indices().find(|&(_, c)| is_control(c)) {
            return Err(Error::invalid(
                field(),
                format!("control character U+{:04X} at byte {at} is not allowed", c as u32),
            ));
        }
        let key = match case {
            Case::Sensitive => k.text.clone(),
            Case::Insensitive => k.text.to_ascii_lowercase(),
        };
        if seen.insert((key, k.mode)) {
            out.push(Keyword {
                text: k.text.clone(),
                mode: k.mode,
            });
        }
    }
    Ok(out)
}

fn speakers(monitor: &str, list: Option<&[String]>) -> Result<Speakers, Error> {
    let Some(list) = list else {
        return Ok(Speakers::All);
    };
    if list.is_empty() {
        return Err(Error::invalid(
            "trigger.speakers",
            "at least one speaker (omit the field to scan every speaker)",
        ));
    }
    let mut out: Vec<Speaker> = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let field = format!("trigger.speakers[{i}]");
        let Some(sp) = Speaker::parse(s) else {
            return Err(Error::invalid(
                field,
                format!("{s:?} is not a speaker ({SPEAKER_LIST})"),
            ));
        };
        if let Speaker::Monitor(name) = &sp
            && name == monitor
        {
            return Err(Error::invalid(
                field,
                format!("{s:?} is this monitor itself: its own advice is never matched against its triggers"),
            ));
        }
        if !out.contains(&sp) {
            out.push(sp);
        }
    }
    Ok(Speakers::Only(out))
}

fn breaker(b: BreakerSpec) -> Result<BreakerConfig, Error> {
    fn field(name: &str, v: Option<u64>, (lo, hi): (u64, u64), default: u32) -> Result<u32, Error> {
        let Some(v) = v else { return Ok(default) };
        if !(lo..=hi).contains(&v) {
            return Err(Error::invalid(
                format!("breaker.{name}"),
                format!("{v} is out of range {lo}..={hi}"),
            ));
        }
        u32::try_from(v).map_err(|_| Error::invalid(format!("breaker.{name}"), format!("{v} is out of range")))
    }
    Ok(BreakerConfig {
        max_cycles: field("max_cycles", b.max_cycles, MAX_CYCLES_RANGE, DEFAULT_MAX_CYCLES)?,
        max_wakes: field("max_wakes", b.max_wakes, MAX_WAKES_RANGE, DEFAULT_MAX_WAKES)?,
        window_mins: field("window_mins", b.window_mins, WINDOW_MINS_RANGE, DEFAULT_WINDOW_MINS)?,
    })
}
