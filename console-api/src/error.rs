//! The API's error codes and the error object every failed call answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Stable error codes (API.md, "Errors").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Parse,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    Unauthenticated,
    Forbidden,
    NotFound,
    Conflict,
    LocalOnly,
    /// The home node of an agent or conversation cannot be reached now.
    Unreachable,
    /// The CLI could not be launched because of the node's setup (a harness
    /// program, image or file): the message names the setting to fix.
    LaunchFailed,
    /// The agent's spend bucket cannot cover the next step (`data.retry_after_ms`
    /// when it accrues; `data.state: "exhausted"` when a human must act).
    PausedForBudget,
    Busy,
}

impl ErrorCode {
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::Parse => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::Unauthenticated => -32001,
            ErrorCode::Forbidden => -32003,
            ErrorCode::NotFound => -32004,
            ErrorCode::Conflict => -32009,
            ErrorCode::LocalOnly => -32010,
            ErrorCode::Unreachable => -32012,
            ErrorCode::LaunchFailed => -32014,
            ErrorCode::PausedForBudget => -32013,
            ErrorCode::Busy => -32029,
        }
    }

    pub fn from_code(code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.code() == code)
    }

    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::Parse,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::Internal,
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::LocalOnly,
        ErrorCode::Unreachable,
        ErrorCode::LaunchFailed,
        ErrorCode::PausedForBudget,
        ErrorCode::Busy,
    ];
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn kind(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in [
            -32700, -32600, -32601, -32602, -32603, -32001, -32003, -32004, -32009, -32010, -32012, -32014, -32029,
        ] {
            let kind = ErrorCode::from_code(code).expect("known code");
            assert_eq!(kind.code(), code);
        }
        assert_eq!(ErrorCode::from_code(-1), None);
    }
}
