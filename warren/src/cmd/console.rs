//! `warren console pair`: a one-time code for the web console (local-only,
//! over the node's Unix socket), printed with the console's URL and a QR
//! code of the URL with the code in its fragment (a fragment never reaches
//! a server, a log or a Referer).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Output, finish, s};
use crate::client;

#[derive(Subcommand)]
pub enum ConsoleVerb {
    /// Print a one-time pairing code (valid 60 s, once), the console's URL
    /// and a QR code of both, for a browser or phone to sign in with.
    Pair {
        /// A read-only companion (phone) instead of the full console.
        #[arg(long)]
        companion: bool,
        /// With --companion: also the allowlisted actions (nudge, answer a hold).
        #[arg(long, requires = "companion")]
        with_actions: bool,
        /// Print no QR code.
        #[arg(long)]
        no_qr: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn console(verb: ConsoleVerb, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        ConsoleVerb::Pair {
            companion,
            with_actions,
            no_qr,
            data_dir,
        } => {
            let p = json!({ "companion": companion, "with_actions": with_actions });
            let r = client::unix_call(&client::data_dir(data_dir), m::SESSION_PAIR_CODE, p).await;
            finish(out, r, |v| print_pairing(v, !no_qr))
        }
    }
}

/// The link a QR code carries: the console, with the code in the fragment.
pub(crate) fn pairing_link(url: &str, code: &str) -> String {
    format!("{url}#pair={code}")
}

fn print_pairing(v: &Value, qr: bool) {
    let (url, code) = (s(v, "url"), s(v, "code"));
    println!("console: {url}");
    println!("code:    {code}   ({}, valid 60 s, once)", s(v, "profile"));
    if qr {
        match qr_text(&pairing_link(url, code)) {
            Some(text) => println!("\n{text}"),
            None => eprintln!("(the link is too long for a QR code)"),
        }
    }
}

/// A QR code as text, two modules per character cell (dark on light, with
/// the quiet zone), readable by a phone camera off a terminal.
pub(crate) fn qr_text(data: &str) -> Option<String> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(data.as_bytes()).ok()?;
    Some(
        code.render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_qr_carries_the_link_in_a_fragment() {
        let link = pairing_link("http://127.0.0.1:7767/", "ABCD-EFGH");
        assert_eq!(link, "http://127.0.0.1:7767/#pair=ABCD-EFGH");
        let text = qr_text(&link).expect("fits");
        let rows: Vec<&str> = text.lines().collect();
        // Version 3 (29 modules) plus a 4-module quiet zone on each side,
        // two module rows per text row.
        assert!(rows.len() >= 18, "{} rows", rows.len());
        assert!(rows.iter().all(|r| r.chars().count() == rows[0].chars().count()));
    }
}
