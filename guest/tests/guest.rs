//! Runs the real guest process against an in-test fake node.

use std::process::Stdio;
use std::time::Duration;

use ed25519_dalek::SigningKey;
use futures_util::{SinkExt, StreamExt};
use guest::proto::{self, GuestMsg, NodeMsg};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_warren-guest-test");
const STEP: Duration = Duration::from_secs(10);

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(STEP, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

struct FakeNode {
    listener: TcpListener,
    key: SigningKey,
}

impl FakeNode {
    async fn new() -> FakeNode {
        FakeNode {
            listener: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            key: SigningKey::from_bytes(&[42; 32]),
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "WARREN_NODE_URL",
                format!("ws://{}/guest", self.listener.local_addr().unwrap()),
            ),
            ("WARREN_NODE_KEY", hex::encode(self.key.verifying_key().as_bytes())),
            ("WARREN_GUEST_CONVERSATION", "conv-1".into()),
            ("WARREN_LAUNCH_TOKEN", "launch-secret".into()),
        ]
    }

    /// Accepts a connection and reads its hello.
    async fn accept(&self) -> (Conn, GuestMsg) {
        let (tcp, _) = within("guest dials", self.listener.accept()).await.unwrap();
        let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let mut conn = Conn {
            ws,
            output: String::new(),
        };
        let hello = conn.text().await;
        (conn, hello)
    }

    async fn accept_welcomed(&self, session_key: &str) -> (Conn, GuestMsg) {
        let (mut conn, hello) = self.accept().await;
        conn.welcome(&self.key, &hello, session_key).await;
        (conn, hello)
    }
}

struct Conn {
    ws: WebSocketStream<TcpStream>,
    /// Every byte of binary output seen on this connection, lossily decoded.
    output: String,
}

enum Frame {
    Text(GuestMsg),
    Binary(Vec<u8>),
    Closed,
}

impl Conn {
    async fn frame(&mut self) -> Frame {
        loop {
            match within("next frame", self.ws.next()).await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Frame::Closed,
                Some(Ok(Message::Text(t))) => return Frame::Text(proto::decode(&t).unwrap()),
                Some(Ok(Message::Binary(b))) => {
                    self.output.push_str(&String::from_utf8_lossy(&b));
                    return Frame::Binary(b.to_vec());
                }
                Some(Ok(_)) => {}
            }
        }
    }

    async fn text(&mut self) -> GuestMsg {
        loop {
            match self.frame().await {
                Frame::Text(msg) => return msg,
                Frame::Binary(_) => {}
                Frame::Closed => panic!("connection closed; output so far: {:?}", self.output),
            }
        }
    }

    async fn send(&mut self, msg: &NodeMsg) {
        self.ws.send(Message::text(proto::encode(msg))).await.unwrap();
    }

    async fn welcome(&mut self, key: &SigningKey, hello: &GuestMsg, session_key: &str) {
        let GuestMsg::Hello {
            conversation, nonce, ..
        } = hello
        else {
            panic!("not a hello: {hello:?}")
        };
        let node_sig = proto::sign_welcome(key, conversation, nonce);
        self.send(&NodeMsg::Welcome {
            session_key: session_key.into(),
            node_sig,
        })
        .await;
    }

    /// Sends a request and returns its reply's (ok, error, result).
    async fn request(&mut self, msg: NodeMsg) -> (bool, Option<String>, Option<Value>) {
        let want = msg.id().unwrap();
        self.send(&msg).await;
        match self.text().await {
            GuestMsg::Reply { id, ok, error, result } if id == want => (ok, error, result),
            other => panic!("expected reply {want}, got {other:?}"),
        }
    }

    async fn write(&mut self, id: u64, text: &str) {
        let (ok, error, _) = self
            .request(NodeMsg::Write {
                id,
                data: proto::encode_write(text.as_bytes()),
            })
            .await;
        assert!(ok, "write failed: {error:?}");
    }

    async fn output_until(&mut self, needle: &str) {
        while !self.output.contains(needle) {
            match self.frame().await {
                Frame::Binary(_) => {}
                Frame::Text(msg) => panic!("unexpected {msg:?} while waiting for {needle:?}"),
                Frame::Closed => panic!("closed while waiting for {needle:?}; output: {:?}", self.output),
            }
        }
    }

    async fn exited(&mut self) -> i32 {
        match self.text().await {
            GuestMsg::Exited { code } => code,
            other => panic!("expected exited, got {other:?}"),
        }
    }
}

struct Guest {
    child: tokio::process::Child,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
}

fn collect<R: tokio::io::AsyncRead + Unpin + Send + 'static>(mut r: R) -> JoinHandle<String> {
    tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    })
}

impl Guest {
    fn spawn(env: &[(&str, String)], cli: &[&str]) -> Guest {
        let mut child = tokio::process::Command::new(BIN)
            .args(cli)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("WARREN_GUEST_ROWS", "24")
            .env("WARREN_GUEST_COLS", "80")
            .env("WARREN_TEST_MARKER", "kept")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Guest { child, stdout, stderr }
    }

    /// Waits for the guest to exit: (exit code, stdout, stderr).
    async fn finish(mut self) -> (i32, String, String) {
        let status = within("guest exits", self.child.wait()).await.unwrap();
        let stdout = within("stdout", self.stdout).await.unwrap();
        let stderr = within("stderr", self.stderr).await.unwrap();
        (status.code().expect("guest killed by a signal"), stdout, stderr)
    }
}

#[tokio::test]
async fn proxy_only_mode_passes_output_and_exit_code_through() {
    let guest = Guest::spawn(&[], &["sh", "-c", "echo hi; exit 3"]);
    let (code, stdout, _) = guest.finish().await;
    assert_eq!(code, 3);
    assert!(stdout.contains("hi"), "{stdout:?}");
}

#[tokio::test]
async fn sigterm_hangs_up_the_cli() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(BIN)
        .args(["sh", "-c", "echo ready; read x"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    while !within("ready", lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .contains("ready")
    {}
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    let status = within("guest exits", child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGHUP));
}

#[tokio::test]
async fn hello_carries_the_launch_token_and_the_cli_never_sees_it() {
    let node = FakeNode::new().await;
    let guest = Guest::spawn(&node.env(), &["sh", "-c", "env; echo env-done; read x; exit 4"]);
    let (mut conn, hello) = node.accept_welcomed("sk-1").await;
    let GuestMsg::Hello {
        conversation,
        credential,
        reconnect,
        nonce,
        rows,
        cols,
        pid,
        version,
    } = hello
    else {
        panic!("first frame must be a hello: {hello:?}")
    };
    assert_eq!(
        (conversation.as_str(), credential.as_str(), reconnect),
        ("conv-1", "launch-secret", false)
    );
    assert_eq!(
        (nonce.len(), rows, cols, version.as_str()),
        (64, 24, 80, env!("CARGO_PKG_VERSION"))
    );
    assert!(pid > 0);
    conn.output_until("env-done").await;
    conn.write(1, "\n").await;
    assert_eq!(conn.exited().await, 4);
    let (code, stdout, _) = guest.finish().await;
    assert_eq!(code, 4, "the guest exits with the CLI's code");
    assert!(
        stdout.contains("WARREN_TEST_MARKER=kept"),
        "other variables pass through: {stdout}"
    );
    for hidden in [
        "WARREN_LAUNCH_TOKEN",
        "launch-secret",
        "WARREN_NODE_KEY",
        "WARREN_NODE_URL",
        "WARREN_GUEST_CONVERSATION",
    ] {
        assert!(!stdout.contains(hidden), "the CLI saw {hidden}: {stdout}");
    }
}

#[tokio::test]
async fn a_welcome_signed_by_another_key_is_rejected_and_the_guest_redials() {
    let node = FakeNode::new().await;
    let impostor = SigningKey::from_bytes(&[9; 32]);
    let _guest = Guest::spawn(&node.env(), &["cat"]);
    for _ in 0..2 {
        let (mut conn, hello) = node.accept().await;
        assert!(
            matches!(&hello, GuestMsg::Hello { credential, reconnect: false, .. } if credential == "launch-secret")
        );
        conn.welcome(&impostor, &hello, "sk-evil").await;
        assert!(
            matches!(conn.frame().await, Frame::Closed),
            "the guest must hang up without sending anything"
        );
    }
}

#[tokio::test]
async fn requests_resize_reconnect_and_close() {
    let node = FakeNode::new().await;
    let guest = Guest::spawn(&node.env(), &["sh"]);
    let (mut conn, _) = node.accept_welcomed("sk-1").await;
    assert!(
        matches!(conn.frame().await, Frame::Binary(_)),
        "a repaint frame comes first"
    );

    conn.write(1, "echo hello-$((6*7))\n").await;
    conn.output_until("hello-42").await;
    let (ok, _, screen) = conn.request(NodeMsg::Screen { id: 2 }).await;
    let screen: proto::ScreenResult = serde_json::from_value(screen.unwrap()).unwrap();
    assert!(ok && screen.rows == 24 && screen.cols == 80);
    // The output line; a shell prompt printed late may precede it ("# hello-42").
    assert!(
        screen
            .lines
            .iter()
            .any(|l| l.ends_with("hello-42") && !l.contains("echo")),
        "{:?}",
        screen.lines
    );
    assert_eq!(screen.lines.len(), 24);

    let (ok, _, _) = conn
        .request(NodeMsg::Resize {
            id: 3,
            rows: 30,
            cols: 100,
        })
        .await;
    assert!(ok);
    conn.write(4, "stty size\n").await;
    conn.output_until("30 100").await;

    let (ok, _, alive) = conn.request(NodeMsg::Alive { id: 5 }).await;
    assert_eq!((ok, alive), (true, Some(serde_json::json!({"alive": true}))));
    let (ok, _, quota) = conn.request(NodeMsg::Quota { id: 6 }).await;
    assert_eq!((ok, quota), (true, Some(serde_json::json!({"metrics": []}))));
    assert!(conn.request(NodeMsg::Ping { id: 7 }).await.0);
    let (ok, error, _) = conn
        .request(NodeMsg::Write {
            id: 8,
            data: "%%%".into(),
        })
        .await;
    assert!(!ok && error.unwrap().contains("base64"));

    // The node drops the link: the guest comes back with its session key.
    drop(conn);
    let (mut conn, hello) = node.accept_welcomed("sk-2").await;
    assert!(
        matches!(&hello, GuestMsg::Hello { credential, reconnect: true, .. } if credential == "sk-1"),
        "{hello:?}"
    );
    let Frame::Binary(repaint) = conn.frame().await else {
        panic!("expected the repaint frame")
    };
    let repaint = String::from_utf8_lossy(&repaint);
    assert!(
        repaint.starts_with("\x1b[H\x1b[2J") && repaint.contains("hello-42"),
        "{repaint:?}"
    );

    let (ok, _, _) = conn.request(NodeMsg::Close { id: 9 }).await;
    assert!(ok);
    let exited = conn.exited().await;
    assert!(matches!(conn.frame().await, Frame::Closed));
    let (code, stdout, _) = guest.finish().await;
    assert_eq!(code, exited);
    assert!(
        stdout.contains("hello-42") && stdout.contains("30 100"),
        "stdout proxies the PTY: {stdout:?}"
    );
}

#[tokio::test]
async fn a_refused_guest_stops_the_cli_and_exits_75() {
    let node = FakeNode::new().await;
    let guest = Guest::spawn(&node.env(), &["cat"]);
    let (mut conn, _) = node.accept().await;
    conn.send(&NodeMsg::Refused {
        reason: "launch token already used".into(),
    })
    .await;
    let (code, _, stderr) = guest.finish().await;
    assert_eq!(code, 75);
    assert!(
        stderr.contains("warren guest: node refused: launch token already used"),
        "{stderr:?}"
    );
}

#[test]
fn on_a_terminal_the_guest_forwards_stdin_and_follows_the_window_size() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read, Write};

    let size = |rows, cols| PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    let pair = native_pty_system().openpty(size(30, 90)).unwrap();
    let mut cmd = CommandBuilder::new(BIN);
    cmd.args(["sh", "-c", "stty size; read x; echo got-$x; read y; stty size; exit 5"]);
    cmd.cwd(std::env::current_dir().unwrap());
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(64);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut expect = |needle: &str| {
        while !seen.contains(needle) {
            let chunk = rx
                .recv_timeout(STEP)
                .unwrap_or_else(|_| panic!("no {needle:?} in {seen:?}"));
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    expect("30 90");
    writer.write_all(b"yes\r").unwrap();
    expect("got-yes");
    pair.master.resize(size(33, 77)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    writer.write_all(b"\r").unwrap();
    expect("33 77");
    assert_eq!(child.wait().unwrap().exit_code(), 5);
}
