//! Token methods: minting a token signed by this node's root, inspecting
//! one, revoking one fleet-wide.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use capabilities::methods::{LOCAL_ONLY_OPERATIONS, need_of};
use capabilities::{MintSpec, Resource, Right};
use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, not_served, to_value};
use crate::api::conn::Conn;
use crate::api::{App, auth};

/// Longest lifetime a minted token may ask for: one year.
const MAX_TTL_SECS: u64 = 366 * 24 * 3600;

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let (app, conn) = (c.app, c.conn);
    let v = match c.method.name {
        m::TOKEN_MINT => to_value(mint(app, conn, c.params()?)?)?,
        m::TOKEN_INSPECT => to_value(inspect(app, &c.params::<console_api::TokenRef>()?.token))?,
        m::TOKEN_REVOKE => {
            let r: console_api::TokenRevoke = c.params()?;
            app.fleet.revoke_fleet_wide(vec![r.revocation_id]).await?;
            json!({ "revoked": true })
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}

/// `token.mint`: a token signed by this node's root. Rights carrying `admin`
/// or `supervise` are only minted on the Unix socket.
fn mint(app: &Arc<App>, conn: &Arc<Conn>, p: console_api::TokenMint) -> Result<console_api::TokenMinted, RpcError> {
    if p.rights.is_empty() {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            "rights: give at least one right",
        ));
    }
    let mut rights = vec![];
    for (i, r) in p.rights.iter().enumerate() {
        let resource: Resource = r
            .resource
            .parse()
            .map_err(|e| RpcError::new(ErrorCode::InvalidParams, format!("rights[{i}].resource: {e}")))?;
        let operation = r
            .operation
            .parse()
            .map_err(|e| RpcError::new(ErrorCode::InvalidParams, format!("rights[{i}].operation: {e}")))?;
        if !conn.is_local() && LOCAL_ONLY_OPERATIONS.contains(&operation) {
            return Err(auth::local_only(&format!("minting a token with {operation} rights")));
        }
        rights.push(Right::new(resource, operation));
    }
    if let Some(methods) = &p.methods
        && let Some(bad) = methods.iter().find(|m| need_of(m).is_none())
    {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("methods: unknown method {bad:?}"),
        ));
    }
    let expires_at = match p.ttl_secs {
        Some(0) => return Err(RpcError::new(ErrorCode::InvalidParams, "ttl_secs: must be at least 1")),
        Some(s) if s > MAX_TTL_SECS => {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!("ttl_secs: {s} is over the limit of {MAX_TTL_SECS}"),
            ));
        }
        Some(s) => Some(SystemTime::now() + Duration::from_secs(s)),
        None => None,
    };
    let token = app
        .node
        .root()
        .mint(&MintSpec {
            rights,
            expires_at,
            methods: p.methods,
            facts: vec![("issued_by".into(), app.node.node_id().to_string())],
        })
        .map_err(|e| RpcError::new(ErrorCode::Internal, e.to_string()))?;
    let revocation_ids = capabilities::inspect_unverified(&token)
        .map(|i| i.revocation_ids)
        .map_err(|e| RpcError::new(ErrorCode::Internal, e.to_string()))?;
    Ok(console_api::TokenMinted { token, revocation_ids })
}

/// `token.inspect`: the blocks as Datalog, whether this node trusts the
/// signature, and whether the token is revoked.
fn inspect(app: &Arc<App>, token: &str) -> console_api::TokenInspection {
    let verified = app.verifier.verify_uncached(token.trim());
    let read = match &verified {
        Ok(v) => capabilities::token::inspect(&v.biscuit),
        Err(_) => capabilities::inspect_unverified(token),
    };
    match read {
        Ok(i) => console_api::TokenInspection {
            revoked: app.node.any_revoked(&i.revocation_ids),
            blocks: i.blocks,
            revocation_ids: i.revocation_ids,
            verified: verified.is_ok(),
            error: verified.err().map(|e| e.to_string()),
        },
        Err(e) => console_api::TokenInspection {
            blocks: vec![],
            revocation_ids: vec![],
            verified: false,
            revoked: false,
            error: Some(e.to_string()),
        },
    }
}
