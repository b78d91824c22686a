//! Helpers both parsers share: a token count that accepts any JSON number and
//! is then checked (negative and absurd values are refused with a reason),
//! the cheap pre-checks that let most lines skip JSON decoding, and the
//! fallback that tells a garbled usage line from a line of another shape.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::error::SpendError;

/// The most tokens one bucket of one request may hold: far above any model's
/// context (a few million), far below what a corrupted counter produces.
pub const MAX_TOKENS_PER_REQUEST: u64 = 100_000_000;

/// The most a cumulative counter (Codex's session totals) may hold.
pub const MAX_TOKENS_CUMULATIVE: u64 = 10_000_000_000_000;

/// A token count as written: any JSON number, checked later by [`check`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Count(pub(crate) f64, pub(crate) Option<i128>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a token count")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(Count(v as f64, Some(i128::from(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v as f64, Some(i128::from(v))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                Ok(Count(v, None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(0.0, Some(0)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A count checked against `max`: whole, not negative, not absurd.
pub(crate) fn check(field: &'static str, c: Option<Count>, max: u64) -> Result<u64, SpendError> {
    let Some(Count(f, exact)) = c else { return Ok(0) };
    let v = match exact {
        Some(v) => v,
        None if f.is_finite() && f.fract() == 0.0 => f.clamp(-1e30, 1e30) as i128,
        None => {
            return Err(SpendError::Inconsistent {
                detail: format!("`{field}` is {f}, not a whole number"),
            });
        }
    };
    if v < 0 {
        return Err(SpendError::NegativeTokens {
            field,
            value: i64::try_from(v).unwrap_or(i64::MIN),
        });
    }
    if v > i128::from(max) {
        return Err(SpendError::AbsurdTokens {
            field,
            value: u64::try_from(v).unwrap_or(u64::MAX),
            max,
        });
    }
    Ok(v as u64)
}

/// The line as text, or the reason it is not.
pub(crate) fn utf8(line: &[u8]) -> Result<&str, SpendError> {
    std::str::from_utf8(line).map_err(|e| SpendError::InvalidUtf8 { at: e.valid_up_to() })
}

/// Cheap shape check for lines that are not decoded: one JSON object.
pub(crate) fn looks_like_object(line: &str) -> bool {
    let t = line.trim_ascii();
    t.starts_with('{') && t.ends_with('}')
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// For a line whose typed decoding failed: its top-level `type` if it is
/// valid JSON at all, else why it is not.
pub(crate) fn kind_of_untyped(line: &str) -> Result<Option<String>, SpendError> {
    match serde_json::from_str::<Kind<'_>>(line) {
        Ok(k) => Ok(k.kind.map(Cow::into_owned)),
        Err(e) => Err(SpendError::InvalidJson { detail: short(&e) }),
    }
}

/// A serde error as a short reason.
pub(crate) fn short(e: &serde_json::Error) -> String {
    let s = e.to_string();
    if s.len() > 160 {
        format!("{}...", &s[..s.floor_char_boundary(160)])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(json: &str) -> Option<Count> {
        serde_json::from_str::<Option<Count>>(json).expect("a number")
    }

    #[test]
    fn counts_are_refused_with_reasons() {
        assert_eq!(check("f", count("12"), 100), Ok(12));
        assert_eq!(check("f", count("null"), 100), Ok(0));
        assert_eq!(check("f", None, 100), Ok(0));
        assert_eq!(check("f", count("7.0"), 100), Ok(7));
        assert_eq!(
            check("f", count("-3"), 100),
            Err(SpendError::NegativeTokens { field: "f", value: -3 })
        );
        assert_eq!(
            check("f", count("101"), 100),
            Err(SpendError::AbsurdTokens {
                field: "f",
                value: 101,
                max: 100
            })
        );
        assert!(matches!(
            check("f", count("1.5"), 100),
            Err(SpendError::Inconsistent { .. })
        ));
        assert!(matches!(
            check("f", count("1e300"), 100),
            Err(SpendError::AbsurdTokens { .. })
        ));
        assert!(matches!(
            check("f", count("99999999999999999999"), 100),
            Err(SpendError::AbsurdTokens { .. })
        ));
    }
}
