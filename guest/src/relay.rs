//! Carrying a connection's bytes both ways between two sockets without
//! copying them through this process: each direction moves data with
//! splice(2), socket -> pipe -> socket, so the kernel passes page references
//! along instead of the relay reading every byte into a buffer and writing
//! it out again. Used wherever a guest's traffic is relayed: the guest's
//! loopback forwarder (TCP <-> the conversation's Unix socket) and the
//! node's ends of those sockets (the egress proxy, the node socket).
//!
//! Each direction holds one pipe of at most [`PIPE_BYTES`]: that bounds
//! what is in flight per direction. A direction that reaches the end of its
//! input shuts down the other socket's writing side (a half close, as
//! `tokio::io::copy_bidirectional` does) and the relay ends when both have.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// The pipe each direction moves its bytes through (asked for; the kernel
/// may give less, and the default 64 KiB if it refuses).
pub const PIPE_BYTES: usize = 256 * 1024;

/// A socket the relay can wait on and splice to or from.
pub trait Socket: AsRawFd + Sync {
    /// Waits until the socket may be ready for `interest`.
    fn wait(&self, interest: Interest) -> impl Future<Output = io::Result<()>> + Send;
    /// Runs `op` (a non-blocking call on this socket's fd) and clears the
    /// readiness of `interest` if it would block.
    fn attempt<R>(&self, interest: Interest, op: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
}

/// Tokio's sockets wait and attempt alike.
macro_rules! tokio_socket {
    ($($stream:ty),*) => {$(
        impl Socket for $stream {
            fn wait(&self, interest: Interest) -> impl Future<Output = io::Result<()>> + Send {
                async move { self.ready(interest).await.map(drop) }
            }
            fn attempt<R>(&self, interest: Interest, op: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
                self.try_io(interest, op)
            }
        }
    )*};
}

tokio_socket!(TcpStream, UnixStream);

/// Relays between `a` and `b` until both directions have ended; the bytes
/// carried a -> b and b -> a. An error in either direction ends both.
pub async fn relay<A: Socket, B: Socket>(a: &A, b: &B) -> io::Result<(u64, u64)> {
    tokio::try_join!(pump(a, b), pump(b, a))
}

/// One direction: `from` -> pipe -> `to`, until `from` ends.
async fn pump<F: Socket, T: Socket>(from: &F, to: &T) -> io::Result<u64> {
    let pipe = Pipe::new()?;
    let mut total = 0u64;
    loop {
        // The pipe is empty here: a splice that would block is waiting on `from`.
        let got = loop {
            from.wait(Interest::READABLE).await?;
            match from.attempt(Interest::READABLE, || splice(from.as_raw_fd(), pipe.write(), pipe.size)) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        if got == 0 {
            shutdown_write(to.as_raw_fd());
            return Ok(total);
        }
        let mut left = got;
        while left > 0 {
            to.wait(Interest::WRITABLE).await?;
            match to.attempt(Interest::WRITABLE, || splice(pipe.read(), to.as_raw_fd(), left)) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => left -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        total += got as u64;
    }
}

/// A non-blocking pipe, closed on drop.
struct Pipe {
    ends: [OwnedFd; 2],
    size: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two new descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned by nothing else.
        let ends = unsafe { [OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])] };
        // SAFETY: F_SETPIPE_SZ on our own pipe; it returns the size given, or -1.
        let size = unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, PIPE_BYTES as libc::c_int) };
        let size = if size > 0 { size as usize } else { 64 * 1024 };
        Ok(Pipe { ends, size })
    }

    fn read(&self) -> RawFd {
        self.ends[0].as_raw_fd()
    }

    fn write(&self) -> RawFd {
        self.ends[1].as_raw_fd()
    }
}

/// One non-blocking splice of up to `len` bytes.
fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: splice between two descriptors that stay open for the call; no
    // offsets (neither end is seekable).
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Half-closes `fd` for writing; a socket already closed is no error here.
fn shutdown_write(fd: RawFd) {
    // SAFETY: shutdown on a descriptor that stays open for the call.
    unsafe {
        libc::shutdown(fd, libc::SHUT_WR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A TCP client -> relay -> a Unix socket server, both ways, with a
    /// payload larger than any pipe, and each side's half close carried.
    #[tokio::test]
    async fn bytes_cross_both_ways_whole_and_in_order_and_ends_are_carried() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let (unix_end, relay_unix) = UnixStream::pair().unwrap();
        let relayer = tokio::spawn(async move {
            let (t, _) = tcp.accept().await.unwrap();
            relay(&t, &relay_unix).await
        });
        let up: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let down: Vec<u8> = (0..2_000_000u32).map(|i| (i % 241) as u8).collect();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (up2, down2) = (up.clone(), down.clone());
        let server = tokio::spawn(async move {
            let mut unix_end = unix_end;
            let (mut r, mut w) = unix_end.split();
            let reading = async {
                let mut got = vec![];
                r.read_to_end(&mut got).await.unwrap();
                got
            };
            let writing = async {
                w.write_all(&down2).await.unwrap();
                w.shutdown().await.unwrap();
            };
            let (got, ()) = tokio::join!(reading, writing);
            assert!(
                got == up2,
                "the server got {} bytes, not the {} sent",
                got.len(),
                up2.len()
            );
        });
        let (mut r, mut w) = client.split();
        let writing = async {
            w.write_all(&up).await.unwrap();
            w.shutdown().await.unwrap();
        };
        let reading = async {
            let mut got = vec![];
            r.read_to_end(&mut got).await.unwrap();
            got
        };
        let ((), got) = tokio::join!(writing, reading);
        assert!(
            got == down,
            "the client got {} bytes, not the {} sent",
            got.len(),
            down.len()
        );
        server.await.unwrap();
        let (a_to_b, b_to_a) = relayer.await.unwrap().expect("the relay ends cleanly");
        assert_eq!((a_to_b, b_to_a), (up.len() as u64, down.len() as u64));
    }

    /// Peers that go away end the relay rather than leave it waiting.
    #[tokio::test]
    async fn peers_that_leave_end_the_relay() {
        let (a, a_far) = UnixStream::pair().unwrap();
        let (b, b_far) = UnixStream::pair().unwrap();
        let relayer = tokio::spawn(async move { relay(&a, &b).await });
        let mut a_far = a_far;
        a_far.write_all(b"hello").await.unwrap();
        let mut b_far = b_far;
        let mut five = [0u8; 5];
        b_far.read_exact(&mut five).await.unwrap();
        assert_eq!(&five, b"hello");
        drop(b_far);
        drop(a_far);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), relayer).await;
        assert!(ended.is_ok(), "the relay did not end after both peers left");
    }
}
