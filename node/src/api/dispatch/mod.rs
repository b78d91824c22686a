//! The dispatcher: a call of a registered method is checked as its registry
//! entry says (an open method answers before any token is looked at; every
//! other is authorized by `auth.rs` and confined to an instance token's
//! tools), then answered by its family's file, one file per
//! `console_api::registry::Family`. Adding a method means: its registry
//! entry (`console-api/src/methods.rs`), its arm in its family's file, and
//! the node method the arm calls.

mod agent;
mod conversation;
mod fleet;
mod mail;
mod monitors;
mod node;
mod session;
mod supervision;
mod task;
mod tokens;
mod tools;
mod transcript;
mod usage;

use std::sync::Arc;

use console_api::registry::{Family, Method};
use console_api::{ErrorCode, RpcError, methods as m};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::conn::Conn;
use super::{App, auth};

/// One call on its way to its family's arm.
pub(super) struct Call<'a> {
    pub app: &'a Arc<App>,
    pub conn: &'a Arc<Conn>,
    pub method: &'static Method,
    params: Option<Value>,
}

impl Call<'_> {
    /// The params as `T`; the error names the offending field. A debug build
    /// also checks that `T` is the params type the registry declares (or,
    /// for a type of the dispatcher's own, that the registry declares none).
    fn params<T: DeserializeOwned>(&mut self) -> Result<T, RpcError> {
        if cfg!(debug_assertions) {
            self.declared::<T>()?;
        }
        super::params(self.params.take())
    }

    fn declared<T>(&self) -> Result<(), RpcError> {
        let read = std::any::type_name::<T>();
        match self.method.params {
            Some(t) if t.path() == read => Ok(()),
            None if !read.starts_with("console_api::") => Ok(()),
            declared => Err(RpcError::new(
                ErrorCode::Internal,
                format!(
                    "{}: the dispatcher reads {read} but the method registry declares {}",
                    self.method.name,
                    declared.map_or("no params type", |t| t.path())
                ),
            )),
        }
    }

    /// The params as given (for a method that reads them itself).
    fn raw(&mut self) -> Option<Value> {
        self.params.take()
    }

    /// `{}` or no params at all.
    fn no_params(&mut self) -> Result<(), RpcError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Empty {}
        self.params::<Empty>().map(|_| ())
    }

    /// `{conversation}`.
    fn conversation(&mut self) -> Result<String, RpcError> {
        Ok(self.params::<console_api::ConversationRef>()?.conversation)
    }
}

/// Answers one call of `method` on `conn`.
pub(super) async fn call(app: &Arc<App>, conn: &Arc<Conn>, method: &str, p: Option<Value>) -> Result<Value, RpcError> {
    let Some(spec) = m::find(method) else {
        return Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("unknown method {method:?}"),
        ));
    };
    authorize(app, conn, spec, p.as_ref()).await?;
    let mut c = Call {
        app,
        conn,
        method: spec,
        params: p,
    };
    match spec.family {
        Family::Session => session::call(&mut c).await,
        Family::Node => node::call(&mut c).await,
        Family::Fleet => fleet::call(&mut c).await,
        Family::Agent => agent::call(&mut c).await,
        Family::Conversation => conversation::call(&mut c).await,
        Family::Transcript => transcript::call(&mut c).await,
        Family::Supervision => supervision::call(&mut c).await,
        Family::Mail => mail::call(&mut c).await,
        Family::Tools => tools::call(&mut c).await,
        Family::Monitors => monitors::call(&mut c).await,
        Family::Tasks => task::call(&mut c).await,
        Family::Usage => usage::call(&mut c).await,
        Family::Tokens => tokens::call(&mut c).await,
    }
}

/// Whether `conn`'s caller may make this call (an open method: anyone; an
/// instance token: only its agent's granted tools).
pub(super) async fn authorize(
    app: &Arc<App>,
    conn: &Arc<Conn>,
    spec: &Method,
    p: Option<&Value>,
) -> Result<(), RpcError> {
    if !spec.open {
        auth::check(app, conn, spec, p).await?;
        if let Some(agent) = conn.speaks_for() {
            app.tools.instance_tool_call(&agent, spec.name, p).await?;
        }
    }
    Ok(())
}

/// A registered method this node does not answer (yet): its family's arms
/// fall through to this.
fn not_served(method: &Method) -> RpcError {
    RpcError::new(
        ErrorCode::MethodNotFound,
        format!("method {:?} is not served by this node yet", method.name),
    )
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    tracing::error!(error = %e, "internal error");
    RpcError::new(ErrorCode::Internal, "internal error")
}

/// `value` as the answer.
fn to_value(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(internal)
}
