//! Test harness binary: `warren-guest-test PROGRAM [ARGS...]` runs `guest::run`
//! exactly as `warren guest` does, so integration tests can drive a real process.

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: warren-guest-test PROGRAM [ARGS...]");
        std::process::exit(2);
    };
    match guest::run(program, args.collect()).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("warren guest: {e:#}");
            std::process::exit(1);
        }
    }
}
