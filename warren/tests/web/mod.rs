//! The browser tests' helpers: chromedriver (Debian's, installed by the
//! project's script), a headless Chromium session per test at an exact
//! viewport, waiting on the page's own state, screenshots, pairing links and
//! the page's measurements.
#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::support::{TestNode, warren};

/// One browser at a time: on two cores parallel browsers would measure
/// each other, not the console.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The viewports of the issue: a laptop and a phone.
pub const VIEWPORTS: &[(&str, u32, u32)] = &[("desktop", 1280, 800), ("phone", 393, 851)];

/// chromedriver on a port of its own, stopped when dropped.
pub struct Driver {
    child: Child,
    pub url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Installs Chromium and chromedriver when absent (the project's script, by
/// apt-get); its failure fails the test.
pub fn chromedriver_path() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/scripts/install-browser.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed (the browser tests need Debian's chromium and chromium-driver): {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("the script prints chromedriver's path")
            .trim(),
    )
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The chromedriver for one test; hold the guard for the whole test.
pub async fn start_driver() -> (tokio::sync::MutexGuard<'static, ()>, Driver) {
    let one = ONE_AT_A_TIME.lock().await;
    (one, spawn_driver())
}

pub fn spawn_driver() -> Driver {
    let path = chromedriver_path();
    let port = free_port();
    let child = Command::new(&path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", path.display()));
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not listen on {port} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    driver
}

/// A fresh headless browser (its own profile: a cold cache, empty storage).
pub async fn browser(driver: &Driver, width: u32, height: u32, profile: &Path) -> Client {
    // Two rustls providers are built into this test (ring for the node's
    // client, aws-lc for fantoccini's): say which one the process uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    // A TLS node's certificate is self-signed (`warren up --tls`).
    caps.insert("acceptInsecureCerts".into(), json!(true));
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-dev-shm-usage",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let c = ClientBuilder::rustls()
        .expect("rustls connector")
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a chromedriver session");
    // The window is larger than its viewport: size it so the viewport
    // (what a page and a screenshot see) is exactly width x height.
    c.set_window_size(width, height).await.expect("window size");
    let inner = c
        .execute("return [window.innerWidth, window.innerHeight]", vec![])
        .await
        .expect("inner size");
    let (iw, ih) = (
        inner[0].as_u64().unwrap_or(0) as u32,
        inner[1].as_u64().unwrap_or(0) as u32,
    );
    c.set_window_size(width + width.saturating_sub(iw), height + height.saturating_sub(ih))
        .await
        .expect("window size");
    c
}

/// Runs `script` (a function body returning a value) until it returns
/// something truthy; panics naming `what` after `within`.
pub async fn wait_js(c: &Client, what: &str, within: Duration, script: &str) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let v = c.execute(script, vec![]).await.unwrap_or(Value::Null);
        let truthy = match &v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => true,
        };
        if truthy {
            return v;
        }
        if Instant::now() > deadline {
            let body = c
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap_or(Value::Null);
            panic!(
                "timed out waiting for: {what}\nthe page says:\n{}",
                body.as_str().unwrap_or("?")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the element `css` once it is there (re-found each try: views
/// re-render).
pub async fn click(c: &Client, css: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ok = match c.find(Locator::Css(css)).await {
            Ok(e) => e.click().await.is_ok(),
            Err(_) => false,
        };
        if ok {
            return;
        }
        assert!(Instant::now() < deadline, "no clickable {css}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn type_into(c: &Client, css: &str, text: &str) {
    let e = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .expect(css);
    e.clear().await.expect("clear");
    e.send_keys(text).await.expect("type");
}

pub fn shots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("browser-shots");
    std::fs::create_dir_all(&dir).expect("shots dir");
    dir
}

/// Saves a screenshot `NAME.png` and lists it, with what it shows, in the
/// shots' `README.txt` (one line each, kept across the tests of a run).
pub async fn shot(c: &Client, name: &str, what: &str) -> PathBuf {
    let png = c.screenshot().await.expect("screenshot");
    let dir = shots_dir();
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    eprintln!("screenshot: {}", path.display());
    let readme = dir.join("README.txt");
    let mut lines: std::collections::BTreeMap<String, String> = std::fs::read_to_string(&readme)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(".png: "))
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect();
    lines.insert(name.to_string(), what.to_string());
    let body: String = lines.iter().map(|(n, w)| format!("{n}.png: {w}\n")).collect();
    std::fs::write(
        &readme,
        format!("The web console's screenshots, written by `cargo test -p warren --test browser`.\n\n{body}"),
    )
    .expect("write README.txt");
    path
}

/// `warren console pair ARGS --json`: the link with the code in its fragment.
pub fn pairing_link(node: &TestNode, args: &[&str]) -> (String, String) {
    let mut all = vec!["console", "pair", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = warren(&all, &node.path());
    assert_eq!(code, 0, "warren console pair: {err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let code = v["code"].as_str().expect("code").to_string();
    (format!("{}#pair={code}", v["url"].as_str().expect("url")), code)
}

/// Where `node` serves its console (http, ending in `/`).
pub fn console_base(node: &TestNode) -> String {
    node.target()
        .url
        .replace("ws://", "http://")
        .replace(console_api::WS_PATH, "/")
}

/// A 1280x800 browser paired with `node`, once the console shows its fleet
/// view (keep the profile dir as long as the browser).
pub async fn paired_console(driver: &Driver, node: &TestNode) -> (Client, tempfile::TempDir) {
    let profile = tempfile::tempdir().expect("profile dir");
    let c = browser(driver, 1280, 800, profile.path()).await;
    let (link, _) = pairing_link(node, &[]);
    c.goto(&link).await.expect("pair");
    wait_js(
        &c,
        "the console",
        Duration::from_secs(20),
        "return document.querySelector('#nodes')",
    )
    .await;
    (c, profile)
}

/// No URL the browser saw may carry a token.
pub async fn assert_no_token_in_urls(c: &Client, tokens: &[String]) {
    let urls = c
        .execute(
            "return [location.href].concat(performance.getEntries().map(e => e.name))",
            vec![],
        )
        .await
        .expect("urls");
    for u in urls.as_array().into_iter().flatten() {
        let u = u.as_str().unwrap_or_default();
        for t in tokens {
            assert!(!u.contains(t.as_str()), "a token in the URL {u}");
        }
    }
    // The pairing code came in the fragment (it never reaches a server) and
    // left the address bar at once.
    let here = c.current_url().await.expect("url");
    assert!(
        !here.as_str().contains("pair="),
        "the pairing code stayed in the address bar: {here}"
    );
}

/// Types `word` into the terminal (`css`: the terminal itself on a desktop,
/// the keys box on a phone) one key at a time, each after the last one's
/// echo, then Enter; the keystroke-to-echo times (ms) the page measured.
pub async fn type_in_terminal(c: &Client, css: &str, word: &str) -> Vec<f64> {
    click(c, css).await;
    let before = c
        .execute("return window.warrenStats().keys.length", vec![])
        .await
        .expect("stats")
        .as_u64()
        .unwrap_or(0);
    let target = c.find(Locator::Css(css)).await.expect(css);
    for (i, ch) in word.chars().enumerate() {
        target.send_keys(&ch.to_string()).await.expect("a key");
        wait_js(
            c,
            "a keystroke's echo",
            Duration::from_secs(10),
            &format!("return window.warrenStats().keys.length >= {}", before + i as u64 + 1),
        )
        .await;
    }
    target.send_keys("\u{e007}").await.expect("Enter");
    let all = c
        .execute("return window.warrenStats().keys", vec![])
        .await
        .expect("stats");
    all.as_array()
        .expect("samples")
        .iter()
        .skip(before as usize)
        .take(word.chars().count())
        .filter_map(Value::as_f64)
        .collect()
}

/// Polls `check` until it answers, or panics naming `what` after `within`.
pub async fn eventually<T>(what: &str, within: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// First paint of the fleet view and its bytes, from the page's own timing.
pub async fn measure_fleet_paint(c: &Client, base: &str) -> (f64, u64, u64) {
    // A new load of the page: the stored token signs in.
    c.goto(base).await.expect("goto");
    let ms = wait_js(
        c,
        "the fleet view's first paint",
        Duration::from_secs(20),
        "const m = performance.getEntriesByName('fleet-ready'); return m.length ? m[0].startTime : null",
    )
    .await
    .as_f64()
    .expect("ms");
    let bytes = c
        .execute(
            "const nav = performance.getEntriesByType('navigation')[0];
             const res = performance.getEntriesByType('resource');
             const http = (nav ? nav.transferSize : 0) + res.reduce((a, r) => a + r.transferSize, 0);
             const ws = window.warrenStats ? window.warrenStats() : {in: 0, out: 0};
             return [http, ws.in + ws.out];",
            vec![],
        )
        .await
        .expect("bytes");
    (
        ms,
        bytes[0].as_u64().unwrap_or_default(),
        bytes[1].as_u64().unwrap_or_default(),
    )
}

/// Keystroke-to-echo in the page: `lines` typed into the terminal (`css`:
/// the terminal itself on a desktop, the keys box on a phone) one key at a
/// time, each line then sent with Enter. The page times each key from its
/// keydown (a capturing listener, `performance.now()`) to the moment a
/// MutationObserver sees the terminal's cursor row show the line typed so
/// far; the samples (ms) in key order.
pub async fn echo_latency(c: &Client, css: &str, lines: &[String]) -> Vec<f64> {
    click(c, css).await;
    c.execute(
        "if (!window.__echo) {
           const e = window.__echo = { samples: [], want: null, t: null };
           document.addEventListener('keydown', (ev) => {
             if (e.want && e.t === null && ev.key.length === 1) e.t = performance.now();
           }, true);
           const term = document.getElementById('terminal');
           const seen = () => {
             if (e.t === null) return;
             const row = term.querySelector('.cursor')?.closest('.trow');
             if (row && row.textContent.includes(e.want)) {
               e.samples.push(performance.now() - e.t);
               e.t = null;
               e.want = null;
             }
           };
           new MutationObserver(seen).observe(term, { childList: true, subtree: true, characterData: true });
         }
         window.__echo.samples = [];",
        vec![],
    )
    .await
    .expect("install the echo timer");
    let mut n = 0;
    for line in lines {
        let mut typed = String::new();
        for ch in line.chars() {
            typed.push(ch);
            n += 1;
            c.execute(
                "window.__echo.want = arguments[0]; window.__echo.t = null;",
                vec![json!(format!("❯ {typed}"))],
            )
            .await
            .expect("arm the echo timer");
            // Re-found each key: the terminal's element is kept, the keys box too.
            let target = c.find(Locator::Css(css)).await.expect(css);
            target.send_keys(&ch.to_string()).await.expect("a key");
            wait_js(
                c,
                "a keystroke's echo in the terminal",
                Duration::from_secs(10),
                &format!("return window.__echo.samples.length >= {n}"),
            )
            .await;
        }
        let target = c.find(Locator::Css(css)).await.expect(css);
        target.send_keys("\u{e007}").await.expect("Enter");
        wait_js(
            c,
            "the typed line's reply",
            Duration::from_secs(30),
            &format!(
                "return [...document.querySelectorAll('#transcript li.speaker-agent .text')].some(e => e.textContent === {:?})",
                format!("echo: {line}")
            ),
        )
        .await;
    }
    let v = c
        .execute("return window.__echo.samples", vec![])
        .await
        .expect("samples");
    v.as_array()
        .expect("samples")
        .iter()
        .filter_map(Value::as_f64)
        .collect()
}

/// Today's UTC day minus `back` days, `YYYY-MM-DD`.
pub fn utc_day(back: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    spend::time::utc_day(now - back as i64 * 86_400_000)
}
