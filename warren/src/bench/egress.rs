//! Egress: what a guest's way out costs. The real path on one host: a
//! client -> the guest's loopback forwarder (`guest::forward`) -> the
//! conversation's `egress.sock` -> the node's proxy (a `CONNECT`, decided
//! against the allow-list) -> the destination; beside it, the same client
//! connecting directly. Reported: a fresh connection's time to its first
//! answer (p50/p99, and what the proxy adds at p99) and a 100 MB download's
//! throughput (and its share of direct): as fast as loopback goes (the
//! relays' own ceiling: two more hops, each spliced socket -> pipe -> socket
//! by `guest::relay`) and paced at a fast internet link's rate (1 Gbit/s),
//! which is what a guest downloads over. Each download's CPU cost per GB is
//! reported with it: unpaced, every party (destination, relays, client)
//! shares this machine's cores, so the relays' cost, not their waiting,
//! bounds the share of direct (the line says how far).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use node::proxy::sockets::Sockets;
use node::proxy::{EgressGate, EgressNote, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// The download's size.
const BULK: u64 = 100 * 1024 * 1024;
/// The answer a latency sample waits for.
const ECHO: usize = 64;

/// Allows what the route's model endpoint names; records nothing.
struct Quiet;

impl EgressGate for Quiet {
    fn grants(&self, _agent: &str) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { vec![] })
    }
    fn record(&self, _note: EgressNote) {}
}

/// A fast internet link: 1 Gbit/s.
const LINK_BYTES_PER_SEC: f64 = 125_000_000.0;

/// The destination: `E` + 63 bytes is echoed; `B` is answered with BULK
/// bytes as fast as it can, `P` with BULK bytes at the link's rate.
async fn upstream() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                if s.read_exact(&mut first).await.is_err() {
                    return;
                }
                if first[0] == b'E' {
                    let mut rest = [0u8; ECHO - 1];
                    if s.read_exact(&mut rest).await.is_ok() {
                        let _ = s.write_all(&[b'e'; ECHO]).await;
                    }
                } else {
                    let paced = first[0] == b'P';
                    let chunk = vec![b'x'; 256 * 1024];
                    let (t0, mut sent) = (Instant::now(), 0u64);
                    while sent < BULK {
                        let n = (BULK - sent).min(chunk.len() as u64) as usize;
                        if s.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        sent += n as u64;
                        if paced {
                            let due = Duration::from_secs_f64(sent as f64 / LINK_BYTES_PER_SEC);
                            tokio::time::sleep(due.saturating_sub(t0.elapsed())).await;
                        }
                    }
                }
            });
        }
    });
    Ok(port)
}

/// A connection to the destination, through the forwarder and proxy when
/// `proxy` is its loopback port.
async fn open(up: u16, proxy: Option<u16>) -> anyhow::Result<TcpStream> {
    let Some(p) = proxy else {
        let s = TcpStream::connect(("127.0.0.1", up)).await?;
        s.set_nodelay(true)?;
        return Ok(s);
    };
    let mut s = TcpStream::connect(("127.0.0.1", p)).await?;
    s.set_nodelay(true)?;
    s.write_all(format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n").as_bytes())
        .await?;
    let mut head = vec![];
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).await?;
        head.push(byte[0]);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        bail!("the proxy refused: {}", String::from_utf8_lossy(&head));
    }
    Ok(s)
}

/// Milliseconds from connecting to the echo's last byte.
async fn first_answer(up: u16, proxy: Option<u16>) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let mut s = open(up, proxy).await?;
    let mut ask = [b'.'; ECHO];
    ask[0] = b'E';
    s.write_all(&ask).await?;
    let mut answer = [0u8; ECHO];
    s.read_exact(&mut answer).await?;
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

/// CPU seconds this process has used so far, every thread, user and system
/// (the client, the relays and the destination all run in it).
fn cpu_secs() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF cannot fail.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// One BULK download (`paced`: at the link's rate): MB/s, and the CPU
/// seconds it cost per GB.
async fn download(up: u16, proxy: Option<u16>, paced: bool) -> anyhow::Result<(f64, f64)> {
    let mut s = open(up, proxy).await?;
    let (t0, cpu0) = (Instant::now(), cpu_secs());
    s.write_all(if paced { b"P" } else { b"B" }).await?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    if got != BULK {
        bail!("downloaded {got} of {BULK} bytes");
    }
    let mb = BULK as f64 / (1024.0 * 1024.0);
    Ok((mb / t0.elapsed().as_secs_f64(), (cpu_secs() - cpu0) * 1024.0 / mb))
}

pub(super) async fn bench_egress(args: &BenchArgs) -> anyhow::Result<()> {
    let scratch = scratch(&args.dir, "egress")?;
    let up = upstream().await?;
    // The node end of a conversation's sockets, allowing its model endpoint.
    let sockets = Sockets::new(scratch.path.join("guests"), "127.0.0.1:9".parse()?, Arc::new(Quiet));
    let (dir, _) = sockets
        .open(Route {
            conversation: "bench".into(),
            agent: "bench".into(),
            model: vec![("127.0.0.1".into(), up)],
        })
        .map_err(anyhow::Error::msg)?;
    // The guest end: a loopback port forwarded to the socket.
    let port = TcpListener::bind("127.0.0.1:0").await?.local_addr()?.port();
    let egress = dir.join(node::proxy::sockets::EGRESS_SOCKET);
    guest::forward::start(&format!("{port}={}", egress.display())).await?;

    let samples = args.samples.max(20);
    for _ in 0..10 {
        first_answer(up, None).await?;
        first_answer(up, Some(port)).await?;
    }
    let (mut direct, mut proxied) = (vec![], vec![]);
    for _ in 0..samples {
        direct.push(first_answer(up, None).await?);
        proxied.push(first_answer(up, Some(port)).await?);
    }
    let (d50, d99, _) = summary(direct);
    let (p50, p99, _) = summary(proxied);
    println!(
        "egress latency: a fresh connection to its first answer ({samples} each): direct p50 {d50:.3} ms p99 {d99:.3} ms; proxied p50 {p50:.3} ms p99 {p99:.3} ms; added p99 {:.3} ms (target <= 2 ms)",
        p99 - d99
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    for (paced, what) in [(false, "over loopback, unpaced"), (true, "from a 1 Gbit/s source")] {
        let (mut d, mut p) = (vec![], vec![]);
        for _ in 0..3 {
            d.push(download(up, None, paced).await?);
            p.push(download(up, Some(port), paced).await?);
        }
        // The fastest run, and its CPU cost.
        let best = |v: &[(f64, f64)]| v.iter().copied().fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
        let ((d, dc), (p, pc)) = (best(&d), best(&p));
        // However well the work overlaps, a download cannot go faster than
        // every core spending all its time on it.
        let ceiling = 100.0 * (cores * 1024.0 / pc) / d;
        let bound = if ceiling < 100.0 {
            format!("; at that CPU cost {cores} cores allow at most {ceiling:.0}%")
        } else {
            String::new()
        };
        println!(
            "egress throughput, a 100 MB download {what} (best of 3): direct {d:.0} MB/s ({dc:.2} CPU s/GB), proxied {p:.0} MB/s ({pc:.2} CPU s/GB) = {:.0}% of direct (target >= 90%{bound})",
            100.0 * p / d
        );
    }
    sockets.close("bench", None);
    Ok(())
}
