//! Advice a monitor injects: validation of its text and the platform prefix
//! `[Advice from monitor "NAME"]: ` that attributes it in-band.

use crate::Error;
use crate::text::first_control_but_newline;

/// Longest advice text, in bytes (before the prefix).
pub const MAX_ADVICE_BYTES: usize = 16 * 1024;
/// Longest prefix [`advice_text`] adds (agent names are at most 63 bytes).
pub const ADVICE_PREFIX_MAX_BYTES: usize = "[Advice from monitor \"\"]: ".len() + 63;

/// Advice must say something, stay within [`MAX_ADVICE_BYTES`] and carry no
/// control characters but newline (the node's `sendMessage` rule; a tab is
/// refused too).
pub fn validate_advice(text: &str) -> Result<(), Error> {
    if text.trim().is_empty() {
        return Err(Error::invalid("text", "advice is empty"));
    }
    if text.len() > MAX_ADVICE_BYTES {
        return Err(Error::invalid(
            "text",
            format!("advice is {} bytes, over the limit of {MAX_ADVICE_BYTES}", text.len()),
        ));
    }
    if let Some((at, c)) = first_control_but_newline(text) {
        return Err(Error::invalid(
            "text",
            format!(
                "control character U+{:04X} at byte {at} is not allowed (only newline is)",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// `[Advice from monitor "NAME"]: TEXT`: what lands in the target, with
/// speaker `monitor:NAME`. Validate the text first ([`advise`] does both).
pub fn advice_text(monitor: &str, text: &str) -> String {
    format!("[Advice from monitor \"{monitor}\"]: {text}")
}

/// [`validate_advice`], then [`advice_text`].
pub fn advise(monitor: &str, text: &str) -> Result<String, Error> {
    validate_advice(text)?;
    Ok(advice_text(monitor, text))
}
