//! What a CLI says of its own state beside its screen: Codex writes
//! `ESC ] 7501 ; state=idle|working|blocked[:...] BEL` as its state changes.
//! The terminal emulator hands every OSC sequence it does not draw to
//! [`Signals`], which keeps the last state (bounded); adapters read it from
//! the screen snapshot and keep the screen as the check.

/// The OSC number of the state signal.
const STATE_OSC: &[u8] = b"7501";
/// Longest state kept, in characters.
const MAX_STATE_CHARS: usize = 32;

/// The signals one terminal has seen.
#[derive(Debug, Default, Clone)]
pub struct Signals {
    /// The last `state=` of an OSC 7501 (`idle`, `working`, `blocked`).
    pub state: Option<String>,
}

impl Signals {
    /// Reads one OSC sequence's parameters (split at `;`).
    pub fn osc(&mut self, params: &[&[u8]]) {
        if params.first() != Some(&STATE_OSC) {
            return;
        }
        for p in &params[1..] {
            if let Some(value) = p.strip_prefix(b"state=") {
                let value = String::from_utf8_lossy(value);
                let state = value.split(':').next().unwrap_or_default();
                self.state = Some(state.chars().take(MAX_STATE_CHARS).collect());
            }
        }
    }
}

impl vt100::Callbacks for Signals {
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        self.osc(params);
    }
}

/// The terminal emulator every session's screen is read from.
pub type Terminal = vt100::Parser<Signals>;

/// A terminal of `rows` x `cols` (0 is read as 1).
/// A terminal dimension as the emulator takes it (0 reads as 1).
pub fn nz(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN)
}

pub fn terminal(rows: u16, cols: u16) -> Terminal {
    vt100::Parser::new_with_callbacks(nz(rows), nz(cols), 0, Signals::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_state_is_kept_and_other_oscs_are_not_it() {
        let mut t = terminal(4, 20);
        assert_eq!(t.callbacks().state, None);
        t.process(b"\x1b]0;title\x07hello\x1b]7501;state=working:app=codex\x1b\\");
        assert_eq!(t.callbacks().state.as_deref(), Some("working"));
        t.process(b"\x1b]7501;state=idle:app=codex\x07");
        assert_eq!(t.callbacks().state.as_deref(), Some("idle"));
        t.process(b"\x1b]7502;state=blocked\x07\x1b]7501;other=1\x07");
        assert_eq!(t.callbacks().state.as_deref(), Some("idle"), "another OSC or no state");
        let long = format!("\x1b]7501;state={}\x07", "x".repeat(500));
        t.process(long.as_bytes());
        assert_eq!(t.callbacks().state.as_ref().map(|s| s.len()), Some(MAX_STATE_CHARS));
        assert!(t.screen().contents().contains("hello"));
    }
}
