//! The pricing chain's IO: the table the ledger is priced by now, kept in the
//! node and replaced as sources answer. At start the last good table cached in
//! the store (`pricing_cache`) is loaded, else the bundled one is used; a task
//! then fetches the live endpoint (`[pricing] url`, a models list in one of
//! the shapes `spend::parse_live` reads) when the cached table is older than
//! `refresh_hours`, again every `refresh_hours`, and eagerly (at most once
//! per `eager_gap_secs`) when the ledger meets a model the table has no price
//! for. A good live answer replaces the table and the cache; a failed one
//! (unreachable, hanging past `timeout_secs`, not HTTP 200, too big, garbage)
//! keeps the table it had, and its reason is reported by `spend.history`'s
//! `pricing.last_error`. Prices are applied at query time, so a new table
//! reprices the whole ledger with no reparse.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ::spend::{CachedTable, LiveAnswer, MAX_LIVE_BYTES, PriceTable, PricingChain, Source, bundled};
use bytes::Bytes;
use http_body_util::Empty;
use hyper::Request;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use node_store::util::now_ms;

/// After a failed fetch, the next try is at most this far off.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(3600);
/// Longest URL accepted in warren.toml.
const MAX_URL: usize = 2048;

/// `[pricing]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PricingSettings {
    /// The live models endpoint (`http://` or `https://`); empty: no live
    /// source, the cached then the bundled table price everything.
    pub url: String,
    /// How old the table may get before it is fetched again.
    pub refresh_hours: u64,
    /// How long one fetch may take, connecting to the last byte.
    pub timeout_secs: u64,
    /// The soonest a model without a price triggers another fetch after the
    /// last one.
    pub eager_gap_secs: u64,
}

impl Default for PricingSettings {
    fn default() -> PricingSettings {
        PricingSettings {
            url: "https://openrouter.ai/api/v1/models".into(),
            refresh_hours: 24,
            timeout_secs: 15,
            eager_gap_secs: 600,
        }
    }
}

impl PricingSettings {
    /// Checks the settings, naming what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !self.url.is_empty() {
            if self.url.len() > MAX_URL {
                return Err(format!("pricing.url: longer than {MAX_URL} bytes"));
            }
            let uri: hyper::Uri = self.url.parse().map_err(|e| format!("pricing.url: {e}"))?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                return Err(format!("pricing.url: {:?} is not an http:// or https:// URL", self.url));
            }
        }
        if !(1..=24 * 365).contains(&self.refresh_hours) {
            return Err("pricing.refresh_hours: give 1 to 8760".into());
        }
        if !(1..=300).contains(&self.timeout_secs) {
            return Err("pricing.timeout_secs: give 1 to 300".into());
        }
        if self.eager_gap_secs > 86_400 {
            return Err("pricing.eager_gap_secs: give 0 to 86400".into());
        }
        Ok(())
    }
}

/// What the node knows about its prices.
#[derive(Debug, Clone, Default)]
struct Status {
    /// When the current table was fetched (a live or cached one), Unix ms.
    fetched_ms: Option<u64>,
    /// When the live endpoint was last asked, Unix ms.
    tried_ms: Option<u64>,
    /// Why the last fetch failed, if it did.
    last_error: Option<String>,
}

/// The table prices are applied from now, and how it came to be.
pub(crate) struct Pricing {
    table: RwLock<Arc<PriceTable>>,
    status: Mutex<Status>,
    /// Rung when a model without a price is met for the first time.
    unknown_model: Arc<tokio::sync::Notify>,
    /// The models without a price already met (each asks for one early
    /// fetch, not one per tick); at most [`MAX_UNKNOWN_REMEMBERED`].
    unknown_met: Mutex<std::collections::BTreeSet<String>>,
}

/// Most unpriced model names remembered.
const MAX_UNKNOWN_REMEMBERED: usize = 1000;

impl Default for Pricing {
    fn default() -> Pricing {
        Pricing {
            table: RwLock::new(Arc::new(bundled())),
            status: Mutex::new(Status::default()),
            unknown_model: Arc::new(tokio::sync::Notify::new()),
            unknown_met: Mutex::new(Default::default()),
        }
    }
}

impl Pricing {
    /// The table to price by now.
    pub(crate) fn table(&self) -> Arc<PriceTable> {
        match self.table.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, table: PriceTable, fetched_ms: Option<u64>) {
        match self.table.write() {
            Ok(mut t) => *t = Arc::new(table),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(table),
        }
        self.status(|s| s.fetched_ms = fetched_ms);
    }

    fn status<R>(&self, f: impl FnOnce(&mut Status) -> R) -> R {
        match self.status.lock() {
            Ok(mut s) => f(&mut s),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Says `model` has no price in the table: the first time it is logged
    /// (its tokens count, its spend is unpriced and charged to no budget) and
    /// the refresher may fetch early.
    pub(crate) fn met_unknown_model(&self, model: &str) {
        let first = match self.unknown_met.lock() {
            Ok(mut met) => met.len() < MAX_UNKNOWN_REMEMBERED && met.insert(model.to_string()),
            Err(_) => false,
        };
        if first {
            tracing::warn!(
                model,
                "a model with no price: its tokens are counted, its spend is unpriced and charged to no budget"
            );
            self.unknown_model.notify_one();
        }
    }

    /// `pricing` of `spend.history` and `usage.get`: the table's source and
    /// day, when it was fetched, and why the last fetch failed.
    pub(crate) fn to_wire(&self, table: &PriceTable) -> Value {
        let s = self.status(|s| s.clone());
        let mut v = json!({ "source": table.source.as_str(), "as_of": table.as_of });
        if table.source != Source::Bundled
            && let Some(ms) = s.fetched_ms
        {
            v["fetched_ms"] = json!(ms);
        }
        if let Some(e) = s.last_error {
            v["last_error"] = json!(e);
        }
        v
    }
}

/// The body of a GET of `url`, at most [`MAX_LIVE_BYTES`], within `timeout`.
pub async fn fetch(url: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    match tokio::time::timeout(timeout, fetch_now(url)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} s", timeout.as_secs())),
    }
}

async fn fetch_now(url: &str) -> Result<Vec<u8>, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("url: {e}"))?;
    let host = uri.host().ok_or("url: no host")?.trim_matches(['[', ']']).to_string();
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err("url: not http:// or https://".into()),
    };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let authority = uri.authority().map(|a| a.as_str().to_string()).unwrap_or(host.clone());
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_string();
    let request = Request::get(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::ACCEPT, "application/json")
        .header(hyper::header::USER_AGENT, concat!("warren/", env!("CARGO_PKG_VERSION")))
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("request: {e}"))?;
    if tls {
        let stream = crate::outbound::tls_connect(&host, tcp).await?;
        get(stream, request).await
    } else {
        get(tcp, request).await
    }
}

async fn get<S>(io: S, request: Request<Empty<Bytes>>) -> Result<Vec<u8>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let answer = crate::outbound::exchange(io, request, MAX_LIVE_BYTES).await?;
    if answer.status != hyper::StatusCode::OK {
        return Err(format!("HTTP {}", answer.status));
    }
    Ok(answer.body.to_vec())
}

impl super::Spend {
    /// Loads the cached table, then keeps the table fresh from the live
    /// endpoint while the node lives.
    pub(super) fn start_pricing(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let (settings, cached) = {
                let Some(node) = weak.upgrade() else { return };
                let cached = match node.store().pricing_cached().await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read the cached price table");
                        None
                    }
                };
                if let Some((json, fetched_ms)) = &cached {
                    match PriceTable::from_cached_json(json) {
                        Ok(t) => node.pricing.set(t, Some(*fetched_ms)),
                        Err(e) => tracing::warn!(error = %e, "the cached price table does not read; it is not used"),
                    }
                }
                (node.pricing_settings.clone(), cached)
            };
            if settings.url.is_empty() {
                return;
            }
            let refresh = Duration::from_secs(settings.refresh_hours * 3600);
            let mut cached_json = cached.as_ref().map(|(j, _)| j.clone());
            let mut due_ms = cached.map(|(_, at)| at + refresh.as_millis() as u64).unwrap_or(0);
            loop {
                let wait = Duration::from_millis(due_ms.saturating_sub(now_ms()));
                let woken_early = {
                    let Some(node) = weak.upgrade() else { return };
                    let bell = node.pricing.unknown_model.clone();
                    drop(node);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => false,
                        _ = bell.notified() => true,
                    }
                };
                let Some(node) = weak.upgrade() else { return };
                if woken_early {
                    let tried = node.pricing.status(|s| s.tried_ms).unwrap_or(0);
                    let gap = settings.eager_gap_secs * 1000;
                    if now_ms().saturating_sub(tried) < gap {
                        // Too soon after the last fetch: the refresh stays due
                        // when it was, or at the end of the gap.
                        due_ms = due_ms.min(tried + gap);
                        continue;
                    }
                }
                let ok = node.refresh_prices(&settings, &mut cached_json).await;
                let next = if ok { refresh } else { refresh.min(RETRY_AFTER_FAILURE) };
                due_ms = now_ms() + next.as_millis() as u64;
            }
        });
    }

    /// One fetch of the live endpoint, and the chain's choice after it.
    /// Returns whether the live table was taken.
    async fn refresh_prices(&self, settings: &PricingSettings, cached_json: &mut Option<String>) -> bool {
        let started = now_ms();
        self.pricing.status(|s| s.tried_ms = Some(started));
        let body = fetch(&settings.url, Duration::from_secs(settings.timeout_secs)).await;
        let answer = LiveAnswer {
            body,
            fetched_on: ::spend::time::utc_day(started as i64),
        };
        let cached = CachedTable(cached_json.clone());
        let chosen = PricingChain::standard(&answer, &cached).choose();
        if chosen.table.source == Source::Live {
            let json = chosen.table.to_json();
            if let Err(e) = self.store().pricing_cache(&json, started).await {
                tracing::warn!(error = %e, "the live price table could not be cached");
            }
            *cached_json = Some(json);
            tracing::info!(models = chosen.table.models.len(), "live prices fetched");
            self.pricing.set(chosen.table, Some(started));
            self.pricing.status(|s| s.last_error = None);
            return true;
        }
        let reason = match (&answer.body, chosen.passed_over.first()) {
            (Err(e), _) => format!("live endpoint: {e}"),
            (Ok(_), Some((_, e))) => format!("live endpoint's answer: {e}"),
            (Ok(_), None) => "live endpoint: no table".into(),
        };
        tracing::warn!(url = %settings.url, error = %reason, source = chosen.table.source.as_str(),
            "live prices unavailable; pricing from the {} table", chosen.table.source.as_str());
        self.pricing.status(|s| s.last_error = Some(reason));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_name_what_is_wrong() {
        assert!(PricingSettings::default().validate().is_ok());
        let off = PricingSettings {
            url: String::new(),
            ..Default::default()
        };
        assert!(off.validate().is_ok());
        for (s, field) in [
            (
                PricingSettings {
                    url: "ftp://x/models".into(),
                    ..Default::default()
                },
                "pricing.url",
            ),
            (
                PricingSettings {
                    url: "not a url".into(),
                    ..Default::default()
                },
                "pricing.url",
            ),
            (
                PricingSettings {
                    refresh_hours: 0,
                    ..Default::default()
                },
                "pricing.refresh_hours",
            ),
            (
                PricingSettings {
                    timeout_secs: 0,
                    ..Default::default()
                },
                "pricing.timeout_secs",
            ),
        ] {
            let e = s.validate().expect_err(field);
            assert!(e.starts_with(field), "{e}");
        }
    }

    /// A one-connection HTTP server answering `status` and `body`, or never
    /// answering when `hang`.
    async fn serve_once(status: &'static str, body: Vec<u8>, hang: bool) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            if hang {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
        });
        format!("http://{addr}/v1/models")
    }

    #[tokio::test]
    async fn a_fetch_gets_the_body_or_says_why_not() {
        let url = serve_once("200 OK", b"{\"data\":[]}".to_vec(), false).await;
        assert_eq!(
            fetch(&url, Duration::from_secs(5)).await.expect("body"),
            b"{\"data\":[]}"
        );

        let url = serve_once("503 Service Unavailable", b"down".to_vec(), false).await;
        let e = fetch(&url, Duration::from_secs(5)).await.expect_err("503");
        assert!(e.contains("HTTP 503"), "{e}");

        let url = serve_once("200 OK", vec![], true).await;
        let e = fetch(&url, Duration::from_millis(300)).await.expect_err("hang");
        assert!(e.contains("no answer within"), "{e}");

        let big = vec![b' '; MAX_LIVE_BYTES + 1];
        let url = serve_once("200 OK", big, false).await;
        let e = fetch(&url, Duration::from_secs(10)).await.expect_err("too big");
        assert!(e.contains("reading the answer"), "{e}");

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let e = fetch(&format!("http://127.0.0.1:{port}/"), Duration::from_secs(5))
            .await
            .expect_err("refused");
        assert!(e.contains("connecting to 127.0.0.1"), "{e}");
    }
}
