//! The pricing chain on a real node against a local fake models endpoint:
//! live prices are fetched and applied (by hand arithmetic, not the bundled
//! rates); a model the live table lacks asks for an early fetch that prices
//! it; a restarted node offline prices from the store's cached table, and an
//! endpoint answering garbage says so and changes nothing; a fresh node whose
//! endpoint hangs prices from the bundled table; a model no table knows is
//! flagged unpriced, never $0.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{TestNode, call, create_agent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(30);

/// What the fake endpoint answers.
#[derive(Clone)]
enum Answer {
    Json(Value),
    Garbage,
    Hang,
}

/// A models endpoint on loopback: answers every GET with the current
/// [`Answer`] and counts the requests.
struct FakePrices {
    url: String,
    answer: Arc<Mutex<Answer>>,
    asked: Arc<Mutex<u64>>,
}

impl FakePrices {
    async fn start(answer: Answer) -> FakePrices {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/api/v1/models", listener.local_addr().expect("addr"));
        let answer = Arc::new(Mutex::new(answer));
        let asked = Arc::new(Mutex::new(0));
        let (a, n) = (answer.clone(), asked.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let (a, n) = (a.clone(), n.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let _ = s.read(&mut buf).await;
                    *n.lock().expect("count") += 1;
                    let now = a.lock().expect("answer").clone();
                    let body = match now {
                        Answer::Json(v) => v.to_string(),
                        Answer::Garbage => "<html>bad gateway</html>".to_string(),
                        Answer::Hang => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            return;
                        }
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                    let _ = s.write_all(body.as_bytes()).await;
                });
            }
        });
        FakePrices { url, answer, asked }
    }

    fn set(&self, answer: Answer) {
        *self.answer.lock().expect("answer") = answer;
    }

    fn asked(&self) -> u64 {
        *self.asked.lock().expect("count")
    }
}

/// A LiteLLM-style price map: Sonnet 4.5 at $10 in / $50 out per million
/// (not the bundled $3 / $15), and, when `nova`, claude-nova-9 at $1 / $2.
fn price_map(nova: bool) -> Value {
    let mut m = json!({
        "claude-sonnet-4-5-20250929": {
            "litellm_provider": "anthropic",
            "input_cost_per_token": 0.00001,
            "output_cost_per_token": 0.00005,
            "cache_read_input_token_cost": 0.000001,
            "cache_creation_input_token_cost": 0.0000125
        }
    });
    if nova {
        m["claude-nova-9"] = json!({
            "litellm_provider": "anthropic",
            "input_cost_per_token": 0.000001,
            "output_cost_per_token": 0.000002
        });
    }
    m
}

fn config(url: &str, timeout_secs: u64) -> String {
    format!("[pricing]\nurl = {url:?}\nrefresh_hours = 24\ntimeout_secs = {timeout_secs}\neager_gap_secs = 0\n")
}

/// A complete Claude Code assistant line: `input` uncached in, `output` out.
fn line(msg: &str, model: &str, input: u64, output: u64) -> String {
    json!({
        "sessionId": "s-price", "type": "assistant", "timestamp": "2026-11-20T09:00:00.000Z",
        "requestId": format!("req_{msg}"), "uuid": format!("u-{msg}"),
        "message": {
            "id": msg, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": output},
        },
    })
    .to_string()
        + "\n"
}

fn append(node: &TestNode, agent: &str, text: &str) {
    use std::io::Write;
    let dir = node
        .path()
        .join("agents")
        .join(agent)
        .join("home/.claude/projects/-w-repo");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("s-price.jsonl"))
        .expect("open session file");
    f.write_all(text.as_bytes()).expect("append");
}

async fn history_until(node: &TestNode, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    support::call_until(
        node,
        what,
        WAIT,
        "spend.history",
        json!({"since_day": "2026-11-01"}),
        want,
    )
    .await
}

fn row<'v>(h: &'v Value, model: &str) -> Option<&'v Value> {
    h["days"].as_array()?.iter().find(|r| r["model"] == model)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_then_cached_then_bundled_and_unknown_models_are_flagged() {
    let prices = FakePrices::start(Answer::Json(price_map(false))).await;
    let mut node = TestNode::start_with_config(&config(&prices.url, 2));
    let mut c = node.client().await;
    create_agent(&mut c, "ada").await;
    append(&node, "ada", &line("m1", "claude-sonnet-4-5-20250929", 1000, 100));

    // Live: 1,000 x $10/M + 100 x $50/M = $0.01 + $0.005.
    let h = history_until(&node, "the live table prices sonnet", |h| {
        h["pricing"]["source"] == "live"
            && close(
                row(h, "claude-sonnet-4-5-20250929").and_then(|r| r["usd"].as_f64()),
                0.015,
            )
    })
    .await;
    assert_eq!(h["pricing"]["as_of"].as_str().map(str::len), Some(10), "{h}");
    assert!(h["pricing"].get("last_error").is_none(), "{h}");
    let asked_at_start = prices.asked();
    assert_eq!(asked_at_start, 1, "one fetch at start");

    // A model the live table lacks: counted at once, unpriced; it asks for
    // an early fetch, whose table now has it: 2,000 x $1/M + 500 x $2/M.
    prices.set(Answer::Json(price_map(true)));
    append(&node, "ada", &line("m2", "claude-nova-9", 2000, 500));
    let h = history_until(&node, "the early fetch prices claude-nova-9", |h| {
        close(row(h, "claude-nova-9").and_then(|r| r["usd"].as_f64()), 0.003)
    })
    .await;
    assert_eq!(prices.asked(), 2, "exactly one early fetch: {h}");
    assert_eq!(h["unpriced_models"], json!([]), "{h}");
    assert!(close(h["usd"].as_f64(), 0.018), "{h}");

    // Restarted with the endpoint answering garbage: the cached table
    // prices everything; the garbage changes nothing and is named.
    prices.set(Answer::Garbage);
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let h = history_until(&node, "the cached table after a restart", |h| {
        h["pricing"]["source"] == "cached"
    })
    .await;
    assert!(close(h["usd"].as_f64(), 0.018), "the cached live prices: {h}");
    append(&node, "ada", &line("m3", "claude-zeta-1", 10, 10));
    let h = history_until(&node, "the garbage answer is reported", |h| {
        h["pricing"]["last_error"].is_string() && row(h, "claude-zeta-1").is_some()
    })
    .await;
    let e = h["pricing"]["last_error"].as_str().unwrap_or_default();
    assert!(e.contains("live endpoint"), "names the source: {e}");
    assert_eq!(h["pricing"]["source"], "cached", "{h}");
    let zeta = row(&h, "claude-zeta-1").expect("zeta row");
    assert_eq!(
        (zeta["priced"].clone(), zeta["usd"].clone()),
        (json!(false), Value::Null),
        "{zeta}"
    );
    assert_eq!(zeta["input"], 10, "its tokens are counted: {zeta}");
    assert_eq!(h["unpriced_models"], json!(["claude-zeta-1"]), "{h}");
    assert!(close(h["usd"].as_f64(), 0.018), "unpriced adds no dollars: {h}");
    let u = call(&mut c, "usage.get", json!({"scope": "agent", "id": "ada"})).await;
    assert_eq!(u["unpriced_models"], json!(["claude-zeta-1"]), "{u}");
    assert_eq!(u["pricing"]["source"], "cached", "{u}");

    // A fresh node whose endpoint hangs: the bundled table, 1,000 x $3/M +
    // 100 x $15/M, and the timeout is named.
    let hanging = FakePrices::start(Answer::Hang).await;
    let fresh = TestNode::start_with_config(&config(&hanging.url, 1));
    let mut c = fresh.client().await;
    create_agent(&mut c, "bo").await;
    append(&fresh, "bo", &line("m1", "claude-sonnet-4-5-20250929", 1000, 100));
    let h = history_until(&fresh, "the bundled table when the endpoint hangs", |h| {
        h["pricing"]["last_error"].is_string() && row(h, "claude-sonnet-4-5-20250929").is_some()
    })
    .await;
    assert_eq!(h["pricing"]["source"], "bundled", "{h}");
    assert!(
        h["pricing"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer within 1 s")),
        "{h}"
    );
    assert!(
        close(
            row(&h, "claude-sonnet-4-5-20250929").and_then(|r| r["usd"].as_f64()),
            0.0045
        ),
        "{h}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_pricing_config_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("warren.toml"),
        "[pricing]\nurl = \"ftp://prices.example/models\"\n",
    )
    .expect("toml");
    let out = std::process::Command::new(support::EXE)
        .args(["up", "--listen", "127.0.0.1:0", "--runtime", "local", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run warren up");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[pricing]") && err.contains("pricing.url"), "{err}");
}
