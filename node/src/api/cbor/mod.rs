//! The `warren.v1.cbor` subprotocol's codec, pure: a CBOR request frame becomes
//! the JSON value a JSON client would have sent (so the one JSON dispatcher,
//! authorization included, answers it), and every JSON message the server
//! queues becomes one CBOR item when it is written.
//!
//! Requests, CBOR -> JSON:
//! - A frame holds one CBOR data item and nothing after it; anything else is
//!   `-32700 parse error: ...`, as malformed JSON is.
//! - Arrays, maps and tags nest at most [`MAX_DEPTH`] deep (`-32600` naming
//!   the limit); that keeps the JSON text well inside serde_json's own limit.
//! - Map keys must be text strings (JSON object keys are) and distinct.
//! - Integers in the i64/u64 range are JSON integers. Beyond it (CBOR reaches
//!   -2^64, and bignums 2^128) a value is what serde_json reads from the same
//!   digits (a float), so a handler answers it as it answers a JSON client.
//!   Finite floats are JSON numbers (`1.0` stays a float, as JSON's `1.0`
//!   does); NaN and the infinities have no JSON form.
//! - `undefined` reads as null; tag 55799 (self-described CBOR) is
//!   transparent; bignums (tags 2, 3) are integers; other tags have no JSON form.
//! - Byte strings: no request field is base64 in JSON (`conversation.sendKeys`'
//!   `keys` is UTF-8 text), so no byte string becomes base64 — that would type
//!   the base64 letters into the PTY. The one field that is raw bytes by
//!   nature, `sendKeys`' `keys`, may be a byte string holding UTF-8 and becomes
//!   that text; a byte string anywhere else has no JSON form.
//! - A value with no JSON form answers `-32602 invalid params: FIELD: ...`
//!   inside `params`, else `-32600 invalid request: FIELD: ...`, with the
//!   request's id when it could be read.
//!
//! Server messages, JSON -> CBOR: each JSON value as its CBOR counterpart,
//! except `terminal.data`'s `data` (base64 in JSON), which is a byte string.

use base64::Engine;
use ciborium::Value as Cbor;
use console_api::{ErrorCode, Id, Response, RpcError, methods as m};
use serde_json::{Map, Value};

/// How deep arrays, maps and tags may nest in a request.
pub const MAX_DEPTH: usize = 64;

/// CBOR's self-described-CBOR tag (RFC 8949 §3.4.6): carries no meaning.
const TAG_SELF_DESCRIBED: u64 = 55799;
/// Unsigned and negative bignums (RFC 8949 §3.4.3) over a byte string.
const TAG_BIGNUM: u64 = 2;
const TAG_NEG_BIGNUM: u64 = 3;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Why a CBOR request frame has no JSON-RPC reading.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not exactly one well-formed CBOR item.
    Parse(String),
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Well-formed CBOR that no JSON client could have sent.
    NoJsonForm {
        id: Option<Id>,
        /// Where, e.g. `params.keys` or `id` (empty: the whole frame).
        path: String,
        what: String,
    },
}

impl DecodeError {
    /// The answer the client gets.
    pub fn response(&self) -> Response {
        match self {
            DecodeError::Parse(m) => Response::err(None, RpcError::new(ErrorCode::Parse, format!("parse error: {m}"))),
            DecodeError::TooDeep => Response::err(
                None,
                RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!("CBOR nested deeper than {MAX_DEPTH} levels (the limit)"),
                ),
            ),
            DecodeError::NoJsonForm { id, path, what } => {
                let error = match path.strip_prefix("params") {
                    Some("") => RpcError::new(ErrorCode::InvalidParams, format!("invalid params: {what}")),
                    Some(rest) if rest.starts_with(['.', '[']) => {
                        let field = rest.strip_prefix('.').unwrap_or(rest);
                        RpcError::new(ErrorCode::InvalidParams, format!("invalid params: {field}: {what}"))
                    }
                    _ if path.is_empty() => {
                        RpcError::new(ErrorCode::InvalidRequest, format!("invalid request: {what}"))
                    }
                    _ => RpcError::new(ErrorCode::InvalidRequest, format!("invalid request: {path}: {what}")),
                };
                Response::err(id.clone(), error)
            }
        }
    }
}

/// A queued server message that could not be written as CBOR.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("the queued message is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("CBOR encoding failed: {0}")]
    Cbor(String),
}

/// A CBOR request frame as the JSON text a JSON client would have sent, or
/// the answer to give instead (over `max_frame_bytes`, unreadable, no JSON form).
pub fn request_text(frame: &[u8], max_frame_bytes: usize) -> Result<String, Box<Response>> {
    if frame.len() > max_frame_bytes {
        return Err(Box::new(super::too_large(frame.len(), max_frame_bytes)));
    }
    let value = decode_request(frame).map_err(|e| Box::new(e.response()))?;
    serde_json::to_string(&value).map_err(|_| {
        Box::new(Response::err(
            None,
            RpcError::new(ErrorCode::Internal, "internal error"),
        ))
    })
}

/// One CBOR request frame as a JSON value (see the module doc for the rules).
pub fn decode_request(frame: &[u8]) -> Result<Value, DecodeError> {
    let mut rest = frame;
    let item: Cbor = ciborium::de::from_reader_with_recursion_limit(&mut rest, MAX_DEPTH).map_err(|e| match e {
        ciborium::de::Error::RecursionLimitExceeded => DecodeError::TooDeep,
        ciborium::de::Error::Io(_) => DecodeError::Parse("the frame ends inside a CBOR item".into()),
        ciborium::de::Error::Syntax(at) => DecodeError::Parse(format!("invalid CBOR at byte {at}")),
        ciborium::de::Error::Semantic(Some(at), msg) => DecodeError::Parse(format!("{msg} at byte {at}")),
        ciborium::de::Error::Semantic(None, msg) => DecodeError::Parse(msg),
    })?;
    if !rest.is_empty() {
        return Err(DecodeError::Parse(format!(
            "{} bytes after the CBOR item (one item per frame)",
            rest.len()
        )));
    }
    let item = untag_self_described(item);
    let id = top_entry(&item, "id").and_then(request_id);
    let mut walk = Walk {
        path: String::new(),
        keys_may_be_bytes: top_entry(&item, "method").and_then(Cbor::as_text) == Some(m::CONVERSATION_SEND_KEYS),
    };
    walk.value(item).map_err(|what| DecodeError::NoJsonForm {
        id,
        path: walk.path,
        what,
    })
}

/// One JSON message the server queued, as the CBOR bytes to send.
pub fn encode_message(json_text: &str) -> Result<Vec<u8>, EncodeError> {
    let value: Value = serde_json::from_str(json_text)?;
    let terminal_data = value.get("method").and_then(Value::as_str) == Some(m::NOTIFY_TERMINAL_DATA);
    let mut item = to_cbor(value);
    if terminal_data
        && let Some(data) = entry_mut(&mut item, "params").and_then(|p| entry_mut(p, "data"))
        && let Some(bytes) = data.as_text().and_then(|t| B64.decode(t).ok())
    {
        // Always base64 (the node wrote it); were it not, the text goes as it is.
        *data = Cbor::Bytes(bytes);
    }
    let mut out = Vec::new();
    ciborium::ser::into_writer(&item, &mut out).map_err(|e| EncodeError::Cbor(e.to_string()))?;
    Ok(out)
}

fn to_cbor(v: Value) -> Cbor {
    match v {
        Value::Null => Cbor::Null,
        Value::Bool(b) => Cbor::Bool(b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Cbor::Integer(u.into())
            } else if let Some(i) = n.as_i64() {
                Cbor::Integer(i.into())
            } else {
                Cbor::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => Cbor::Text(s),
        Value::Array(a) => Cbor::Array(a.into_iter().map(to_cbor).collect()),
        Value::Object(o) => Cbor::Map(o.into_iter().map(|(k, v)| (Cbor::Text(k), to_cbor(v))).collect()),
    }
}

fn entry_mut<'a>(map: &'a mut Cbor, key: &str) -> Option<&'a mut Cbor> {
    let Cbor::Map(entries) = map else { return None };
    entries
        .iter_mut()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
}

fn top_entry<'a>(item: &'a Cbor, key: &str) -> Option<&'a Cbor> {
    let Cbor::Map(entries) = item else { return None };
    entries.iter().find(|(k, _)| k.as_text() == Some(key)).map(|(_, v)| v)
}

/// The id as the JSON dispatcher would read it (an i64 or a string).
fn request_id(v: &Cbor) -> Option<Id> {
    match v {
        Cbor::Integer(i) => i64::try_from(*i).ok().map(Id::Num),
        Cbor::Text(s) => Some(Id::Str(s.clone())),
        Cbor::Tag(TAG_SELF_DESCRIBED, inner) => request_id(inner),
        _ => None,
    }
}

fn untag_self_described(mut v: Cbor) -> Cbor {
    while let Cbor::Tag(TAG_SELF_DESCRIBED, inner) = v {
        v = *inner;
    }
    v
}

/// A CBOR -> JSON conversion that knows where it is (for the error).
struct Walk {
    /// The current place, `params.keys`, `params.list[2]`; left at the
    /// failing place when a conversion fails.
    path: String,
    /// The request is `conversation.sendKeys`.
    keys_may_be_bytes: bool,
}

impl Walk {
    fn value(&mut self, v: Cbor) -> Result<Value, String> {
        Ok(match v {
            Cbor::Null => Value::Null,
            Cbor::Bool(b) => Value::Bool(b),
            Cbor::Text(s) => Value::String(s),
            Cbor::Integer(i) => {
                let i = i128::from(i);
                if let Ok(n) = i64::try_from(i) {
                    Value::from(n)
                } else if let Ok(n) = u64::try_from(i) {
                    Value::from(n)
                } else {
                    json_number(&i.to_string())?
                }
            }
            // ciborium keeps integers beyond CBOR's 64-bit heads as these tags.
            Cbor::Tag(tag @ (TAG_BIGNUM | TAG_NEG_BIGNUM), inner) => {
                let Cbor::Bytes(b) = *inner else {
                    return Err(format!("CBOR tag {tag} (a bignum) must hold a byte string"));
                };
                json_number(
                    &bignum_digits(tag == TAG_NEG_BIGNUM, &b).ok_or("a bignum beyond 128 bits has no JSON form")?,
                )?
            }
            Cbor::Float(f) => serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| format!("the float {f} has no JSON form (JSON has no NaN or infinity)"))?,
            Cbor::Bytes(b) => {
                if !(self.keys_may_be_bytes && self.path == "params.keys") {
                    return Err(format!(
                        "a CBOR byte string ({} bytes) where JSON has no bytes; send a text string \
                         (only conversation.sendKeys' keys may be bytes)",
                        b.len()
                    ));
                }
                Value::String(String::from_utf8(b).map_err(|e| {
                    format!(
                        "the byte string is not UTF-8 (invalid at byte {}); keys are UTF-8 text",
                        e.utf8_error().valid_up_to()
                    )
                })?)
            }
            Cbor::Tag(TAG_SELF_DESCRIBED, inner) => self.value(*inner)?,
            Cbor::Tag(tag, _) => return Err(format!("CBOR tag {tag} has no JSON form")),
            Cbor::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let len = self.path.len();
                    self.path.push_str(&format!("[{i}]"));
                    out.push(self.value(item)?);
                    self.path.truncate(len);
                }
                Value::Array(out)
            }
            Cbor::Map(entries) => {
                let mut out = Map::new();
                for (k, v) in entries {
                    let key = match untag_self_described(k) {
                        Cbor::Text(k) => k,
                        other => {
                            return Err(format!(
                                "a map key is {}; keys must be text strings (JSON object keys are)",
                                kind(&other)
                            ));
                        }
                    };
                    if out.contains_key(&key) {
                        return Err(format!("the key {key:?} appears twice"));
                    }
                    let len = self.path.len();
                    if !self.path.is_empty() {
                        self.path.push('.');
                    }
                    self.path.push_str(&key);
                    let v = self.value(v)?;
                    self.path.truncate(len);
                    out.insert(key, v);
                }
                Value::Object(out)
            }
            other => return Err(format!("{} has no JSON form", kind(&other))),
        })
    }
}

/// What serde_json makes of these digits in a JSON request (beyond 64 bits:
/// a float), so the handler answers as it would a JSON client.
fn json_number(digits: &str) -> Result<Value, String> {
    serde_json::from_str(digits).map_err(|_| format!("the integer {digits} has no JSON form"))
}

/// A bignum's decimal digits (`-1 - n` when negative); None beyond 128 bits.
fn bignum_digits(negative: bool, be_bytes: &[u8]) -> Option<String> {
    let start = be_bytes.iter().position(|b| *b != 0).unwrap_or(be_bytes.len());
    let bytes = &be_bytes[start..];
    if bytes.len() > 16 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    let n = u128::from_be_bytes(buf);
    Some(if negative {
        format!("-{}", n.checked_add(1)?)
    } else {
        n.to_string()
    })
}

fn kind(v: &Cbor) -> String {
    match v {
        Cbor::Integer(i) => format!("the integer {}", i128::from(*i)),
        Cbor::Bytes(_) => "a byte string".into(),
        Cbor::Float(f) => format!("the float {f}"),
        Cbor::Text(_) => "a text string".into(),
        Cbor::Bool(b) => format!("{b}"),
        Cbor::Null => "null".into(),
        Cbor::Tag(t, _) => format!("a value with CBOR tag {t}"),
        Cbor::Array(_) => "an array".into(),
        Cbor::Map(_) => "a map".into(),
        _ => "a CBOR value".into(),
    }
}

#[cfg(test)]
mod tests;
