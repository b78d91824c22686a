//! Which member answers a call: the one place that decides, for every
//! method, whether it is answered here, forwarded to the member that homes
//! what it names, or merged from every member's answer. The method's
//! registry entry says which param names what it is about (its routing key)
//! and whether `{fleet: true}` merges it; the caller side (`forward.rs`)
//! finds out what this node knows of that target (a [`View`]) and asks the
//! members only when this file says to. Pure: no IO.
//!
//! An agent may be addressed `NAME@NODE` anywhere in the fleet; a bare `NAME`
//! is the local node's agent, else the fleet's only agent of that name.

use std::time::Duration;

use console_api::registry::{Method, Route};
use fabric::wire::Locate;
use serde_json::Value;

use crate::fleet::address::split_address;

/// What a call is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `NAME` or `NAME@NODE`.
    Agent(String),
    Conversation(String),
    Hold(String),
    /// A node by name or id (`agent.create {node}`).
    Node(String),
}

/// The target and the param that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aim {
    pub target: Target,
    pub field: &'static str,
}

/// The first decision, from the method and its params alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Way {
    /// Answered here.
    Here,
    /// `{fleet: true}`: this node's list and every member's, merged under this field.
    FanOut(&'static str),
    /// About this target: its home answers.
    Aimed(Aim),
}

/// What the caller side knows of an aim's target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// This node is in a fleet.
    pub in_fleet: bool,
    /// For a node name (`{node}`, `NAME@NODE`): the member it names, `None`
    /// when it names this node.
    pub member: Option<String>,
    /// This node homes the agent, conversation or hold.
    pub here: bool,
    /// The conversation's home, as learned from an earlier answer.
    pub remembered: Option<String>,
}

/// Where a call goes, and with which params (an address to this node made bare).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Local(Option<Value>),
    Remote {
        node_id: String,
        params: Option<Value>,
    },
    /// Ask the members which of them homes it, then [`located`].
    Locate(Locate, Option<Value>),
}

/// Why a call cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A bare agent name several members home.
    Ambiguous { message: String, candidates: Vec<String> },
    /// Nobody that answered homes it, and the one member that could does not answer.
    Unreachable { node: String, message: String },
}

/// How long a forwarded call may take: launches may build a guest image.
pub fn bound(method: &Method) -> Duration {
    match method.launches {
        true => Duration::from_secs(600),
        false => Duration::from_secs(15),
    }
}

fn str_param(params: Option<&Value>, k: &str) -> Option<String> {
    params
        .and_then(|p| p.get(k))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// What `method` with `params` is about, if it is routed at all.
pub fn aim(method: &Method, params: Option<&Value>) -> Option<Aim> {
    let s = |k: &str| str_param(params, k);
    let aim = |target, field| Some(Aim { target, field });
    match method.route {
        Route::Here => None,
        Route::Node(field) => aim(Target::Node(s(field)?), field),
        Route::Hold(field) => aim(Target::Hold(s(field)?), field),
        Route::ScopeId => match s("scope").as_deref() {
            Some("agent") => aim(Target::Agent(s("id")?), "id"),
            Some("conversation") => aim(Target::Conversation(s("id")?), "id"),
            // `{scope: "node", id: NODE}`: that member's usage.
            Some("node") => aim(Target::Node(s("id")?), "id"),
            _ => None,
        },
        Route::AgentOrConversation => match s("conversation") {
            Some(c) => aim(Target::Conversation(c), "conversation"),
            None => aim(Target::Agent(s("agent")?), "agent"),
        },
    }
}

/// The first decision for a call of `method`, from its params alone.
pub fn way(method: &Method, params: Option<&Value>) -> Way {
    if let Some(list) = method.fanout
        && params.and_then(|p| p.get("fleet")).and_then(Value::as_bool) == Some(true)
    {
        return Way::FanOut(list);
    }
    match aim(method, params) {
        Some(a) => Way::Aimed(a),
        None => Way::Here,
    }
}

/// Where an aimed call goes, given what this node knows of its target.
pub fn decide(aim: &Aim, view: &View, params: Option<Value>) -> Step {
    let at_member = |member: &Option<String>, params| match member {
        None => Step::Local(params),
        Some(id) => Step::Remote {
            node_id: id.clone(),
            params,
        },
    };
    match &aim.target {
        Target::Node(_) => match &view.member {
            None => Step::Local(without_field(params, aim.field)),
            some => at_member(some, params),
        },
        Target::Agent(address) => match split_address(address) {
            (name, Some(_)) => at_member(&view.member, with_field(params, aim.field, name)),
            _ if !view.in_fleet || view.here => Step::Local(params),
            (name, None) => Step::Locate(Locate::Agent(name.to_string()), params),
        },
        Target::Conversation(_) | Target::Hold(_) if !view.in_fleet || view.here => Step::Local(params),
        Target::Conversation(id) => match &view.remembered {
            Some(home) => Step::Remote {
                node_id: home.clone(),
                params,
            },
            None => Step::Locate(Locate::Conversation(id.clone()), params),
        },
        Target::Hold(id) => Step::Locate(Locate::Hold(id.clone()), params),
    }
}

/// Where a call goes once the members were asked: `found` the members (id,
/// name) that home `what`, by id; `unreachable` the names of those that
/// could not be asked.
pub fn located(
    what: &Locate,
    found: &[(String, String)],
    unreachable: &[String],
    params: Option<Value>,
) -> Result<Step, Refusal> {
    let remote = |(id, _): &(String, String), params| {
        Ok(Step::Remote {
            node_id: id.clone(),
            params,
        })
    };
    match (what, found) {
        (_, []) => not_found_anywhere(params, unreachable),
        (Locate::Agent(_), [one]) => remote(one, params),
        (Locate::Agent(name), many) => {
            let candidates: Vec<String> = many.iter().map(|(_, member)| format!("{name}@{member}")).collect();
            Err(Refusal::Ambiguous {
                message: format!(
                    "agent: {name:?} names an agent on several nodes ({}): address one as NAME@NODE",
                    candidates.join(", ")
                ),
                candidates,
            })
        }
        (_, [first, ..]) => remote(first, params),
    }
}

/// Nobody reachable homes it: answered here (a plain not-found), unless a
/// member that could home it cannot be asked now.
fn not_found_anywhere(params: Option<Value>, unreachable: &[String]) -> Result<Step, Refusal> {
    if let [only] = unreachable {
        return Err(Refusal::Unreachable {
            node: only.clone(),
            message: format!("it is not on any member that answered, and node {only} cannot be reached now"),
        });
    }
    Ok(Step::Local(params))
}

/// `params` with `field` set to `value` (the bare name a home knows).
pub fn with_field(params: Option<Value>, field: &str, value: &str) -> Option<Value> {
    let mut p = params?;
    if let Some(o) = p.as_object_mut() {
        o.insert(field.to_string(), Value::String(value.to_string()));
    }
    Some(p)
}

/// `params` without `field`.
pub fn without_field(params: Option<Value>, field: &str) -> Option<Value> {
    let mut p = params?;
    if let Some(o) = p.as_object_mut() {
        o.remove(field);
    }
    Some(p)
}

/// `params` without a `fleet` flag, for a fan-out method answered here.
pub fn without_fleet_flag(method: &Method, params: Option<Value>) -> Option<Value> {
    match method.fanout {
        Some(_) => without_field(params, "fleet"),
        None => params,
    }
}

/// Totals a merged answer adds up over its members' answers (today
/// `spend.history`'s): dollar sums and counts are added, lists of names
/// joined without repeats. Anything else of a member's answer besides its
/// list is not merged.
pub fn add_totals(total: &mut serde_json::Map<String, Value>, answer: &Value) {
    for key in ["usd", "unparseable_files"] {
        let Some(n) = answer.get(key).and_then(Value::as_f64) else {
            continue;
        };
        let sum = total.get(key).and_then(Value::as_f64).unwrap_or(0.0) + n;
        let sum = match answer.get(key) {
            Some(v) if v.is_u64() => Value::from(sum as u64),
            _ => Value::from(sum),
        };
        total.insert(key.to_string(), sum);
    }
    if let Some(names) = answer.get("unpriced_models").and_then(Value::as_array) {
        let joined = total.entry("unpriced_models").or_insert_with(|| Value::Array(vec![]));
        if let Some(list) = joined.as_array_mut() {
            for n in names {
                if !list.contains(n) {
                    list.push(n.clone());
                }
            }
        }
    }
}

/// Conversation ids an answer names (so their home is remembered).
pub fn conversations_in(result: &Value) -> Vec<String> {
    let id = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_string);
    let mut out: Vec<String> = result.get("conversation").and_then(id).into_iter().collect();
    if let Some(list) = result.get("conversations").and_then(Value::as_array) {
        out.extend(list.iter().filter_map(id));
    }
    out
}

/// A notification of a forwarded subscription, renamed to the local
/// subscription id (and naming the member it came from, for a fleet-wide
/// subscription); `None` when it is not a notification.
pub fn renamed_note(text: &str, local: &str, origin: Option<&str>) -> Option<String> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    let params = v.get_mut("params")?.as_object_mut()?;
    params.insert("subscription".into(), Value::String(local.to_string()));
    if let Some(node) = origin {
        params.insert("node".into(), Value::String(node.to_string()));
    }
    serde_json::to_string(&v).ok()
}

#[cfg(test)]
mod tests;
