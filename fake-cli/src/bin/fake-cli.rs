//! The `fake-cli` binary: runs the scripted fake coding CLI on this terminal.

fn main() {
    std::process::exit(fake_cli::run(std::env::args().skip(1).collect()));
}
