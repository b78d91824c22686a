//! Making and narrowing tokens: minting with rights (and optional expiry,
//! method list and identity facts), offline attenuation by appending a block
//! of checks, and inspection of a token's blocks as Datalog.

use std::collections::{BTreeSet, HashMap};
use std::time::SystemTime;

use biscuit_auth::builder::{BlockBuilder, Term, date, fact, string};
use biscuit_auth::{Biscuit, UnverifiedBiscuit};

use crate::rights::{Operation, Right};
use crate::{CapError, RootKey};

/// What a new token carries in its authority block.
#[derive(Debug, Clone, Default)]
pub struct MintSpec {
    pub rights: Vec<Right>,
    pub expires_at: Option<SystemTime>,
    /// Only these methods (none: any method the rights allow).
    pub methods: Option<Vec<String>>,
    /// Identity facts, e.g. `("conversation", "c-1")` -> `conversation("c-1")`.
    pub facts: Vec<(String, String)>,
}

/// How to narrow a token. Every part that is set adds one check; a token
/// narrowed this way allows a subset of what it allowed before.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restriction {
    pub agents: Vec<String>,
    pub conversations: Vec<String>,
    pub operations: Vec<Operation>,
    pub methods: Vec<String>,
    pub expires_at: Option<SystemTime>,
}

impl Restriction {
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
            && self.conversations.is_empty()
            && self.operations.is_empty()
            && self.methods.is_empty()
            && self.expires_at.is_none()
    }
}

fn build_err(e: impl std::fmt::Display) -> CapError {
    CapError::Build(e.to_string())
}

fn string_set<'a>(items: impl IntoIterator<Item = &'a str>) -> Term {
    Term::Set(items.into_iter().map(string).collect::<BTreeSet<Term>>())
}

fn check_in(block: BlockBuilder, var: &str, pred: &str, set: Term) -> Result<BlockBuilder, CapError> {
    let mut params = HashMap::new();
    params.insert("allowed".to_string(), set);
    block
        .code_with_params(
            format!("check if {pred}(${var}), {{allowed}}.contains(${var});"),
            params,
            HashMap::new(),
        )
        .map_err(build_err)
}

fn check_expiry(block: BlockBuilder, at: SystemTime) -> Result<BlockBuilder, CapError> {
    let mut params = HashMap::new();
    params.insert("expiry".to_string(), date(&at));
    block
        .code_with_params("check if time($time), $time <= {expiry};", params, HashMap::new())
        .map_err(build_err)
}

/// The block of checks for a restriction.
pub fn restriction_block(r: &Restriction) -> Result<BlockBuilder, CapError> {
    if r.is_empty() {
        return Err(CapError::Build(
            "nothing to restrict: give agents, conversations, operations, methods or an expiry".into(),
        ));
    }
    let mut block = BlockBuilder::new();
    if !r.agents.is_empty() || !r.conversations.is_empty() {
        for a in &r.agents {
            format!("agent:{a}")
                .parse::<crate::Resource>()
                .map_err(CapError::Build)?;
        }
        for c in &r.conversations {
            format!("conversation:{c}")
                .parse::<crate::Resource>()
                .map_err(CapError::Build)?;
        }
    }
    if !r.agents.is_empty() {
        let names: Vec<String> = r.agents.iter().map(|a| format!("agent:{a}")).collect();
        block = check_in(
            block,
            "resource",
            "resource",
            string_set(names.iter().map(String::as_str)),
        )?;
    }
    if !r.conversations.is_empty() {
        let ids: Vec<String> = r.conversations.iter().map(|c| format!("conversation:{c}")).collect();
        block = check_in(
            block,
            "resource",
            "resource",
            string_set(ids.iter().map(String::as_str)),
        )?;
    }
    if !r.operations.is_empty() {
        block = check_in(
            block,
            "operation",
            "operation",
            string_set(r.operations.iter().map(|o| o.as_str())),
        )?;
    }
    if !r.methods.is_empty() {
        block = check_in(
            block,
            "method",
            "method",
            string_set(r.methods.iter().map(String::as_str)),
        )?;
    }
    if let Some(at) = r.expires_at {
        block = check_expiry(block, at)?;
    }
    Ok(block)
}

impl RootKey {
    /// Mints a token signed by this key.
    pub fn mint(&self, spec: &MintSpec) -> Result<String, CapError> {
        let mut b = Biscuit::builder();
        for r in &spec.rights {
            b = b
                .fact(fact(
                    "right",
                    &[string(&r.resource.to_string()), string(r.operation.as_str())],
                ))
                .map_err(build_err)?;
        }
        for (name, value) in &spec.facts {
            b = b.fact(fact(name, &[string(value)])).map_err(build_err)?;
        }
        let mut checks = BlockBuilder::new();
        if let Some(at) = spec.expires_at {
            checks = check_expiry(checks, at)?;
        }
        if let Some(methods) = &spec.methods {
            checks = check_in(
                checks,
                "method",
                "method",
                string_set(methods.iter().map(String::as_str)),
            )?;
        }
        let token = b.merge(checks).build(self.keys()).map_err(build_err)?;
        token.to_base64().map_err(build_err)
    }
}

/// Appends a block of checks to `token` without verifying it (no key needed):
/// anyone holding a token can narrow it offline.
pub fn attenuate(token: &str, r: &Restriction) -> Result<String, CapError> {
    let block = restriction_block(r)?;
    let t = UnverifiedBiscuit::from_base64(token.trim()).map_err(|e| CapError::Invalid(e.to_string()))?;
    t.append(block).and_then(|t| t.to_base64()).map_err(build_err)
}

/// `token` narrowed to answering the one hold `hold` until `expires_at`
/// (a push's `answer_token`): `supervision.answer` only, only a call that
/// touches `hold:ID`, and an expiry. Offline, like [`attenuate`].
pub fn answer_only(token: &str, hold: &str, expires_at: SystemTime) -> Result<String, CapError> {
    if hold.is_empty() || hold.len() > 128 || hold.contains('"') {
        return Err(CapError::Build(format!("hold {hold:?}: not a hold id")));
    }
    let mut block = BlockBuilder::new();
    block = check_in(block, "method", "method", string_set(["supervision.answer"]))?;
    let resource = format!("hold:{hold}");
    block = check_in(block, "resource", "resource", string_set([resource.as_str()]))?;
    block = check_expiry(block, expires_at)?;
    let t = UnverifiedBiscuit::from_base64(token.trim()).map_err(|e| CapError::Invalid(e.to_string()))?;
    t.append(block).and_then(|t| t.to_base64()).map_err(build_err)
}

/// A token's blocks as Datalog source, and its revocation ids (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    pub blocks: Vec<String>,
    pub revocation_ids: Vec<String>,
}

/// Reads a token's blocks without verifying its signature.
pub fn inspect_unverified(token: &str) -> Result<Inspection, CapError> {
    let t = UnverifiedBiscuit::from_base64(token.trim()).map_err(|e| CapError::Invalid(e.to_string()))?;
    let blocks = (0..t.block_count())
        .map(|i| t.print_block_source(i).map_err(|e| CapError::Invalid(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Inspection {
        blocks,
        revocation_ids: t.revocation_identifiers().iter().map(hex::encode).collect(),
    })
}

/// Reads a verified token's blocks.
pub fn inspect(token: &Biscuit) -> Result<Inspection, CapError> {
    let blocks = (0..token.block_count())
        .map(|i| {
            token
                .print_block_source(i)
                .map_err(|e| CapError::Invalid(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Inspection {
        blocks,
        revocation_ids: token.revocation_identifiers().iter().map(hex::encode).collect(),
    })
}
