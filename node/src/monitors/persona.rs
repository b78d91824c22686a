//! The built-in advisor persona a monitor agent is created from (`warren
//! monitor attach`, the console's attach form): the console's copy
//! (`assets/monitors.js`), and its breaker defaults, are held equal to
//! these by a test.

/// The built-in advisor persona of a monitor created by `warren monitor
/// attach` or the console's attach form.
pub const ADVISOR_PERSONA: &str = "You are a monitor: you watch another agent's conversation and wake when a keyword fires. \
Read what happened with warren-read (the trigger message says where), weigh who said what (a human, the agent, a tool, another monitor), \
then either give one concise, concrete piece of advice with warren-advise, or decide that silence is right and say nothing. \
Never repeat advice you already gave; never argue with the agent.";

#[cfg(test)]
mod tests {
    #[test]
    fn the_console_creates_monitors_from_the_same_persona() {
        let js = crate::console::assets::find("monitors.js").expect("monitors.js is embedded");
        let js = std::str::from_utf8(js.body).expect("utf-8");
        let quoted = serde_json::to_string(super::ADVISOR_PERSONA).expect("json");
        assert!(
            js.contains(&format!("export const ADVISOR_PERSONA = {quoted};")),
            "assets/monitors.js's ADVISOR_PERSONA differs from node::monitors::ADVISOR_PERSONA"
        );
        let defaults = format!(
            "const BREAKER_DEFAULTS = {{ max_cycles: {}, max_wakes: {}, window_mins: {} }};",
            monitor::DEFAULT_MAX_CYCLES,
            monitor::DEFAULT_MAX_WAKES,
            monitor::DEFAULT_WINDOW_MINS
        );
        assert!(
            js.contains(&defaults),
            "the form's breaker defaults are not the monitor crate's: {defaults}"
        );
    }
}
