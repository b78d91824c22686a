//! The guard and the security headers as axum middleware, and the console's
//! routes (`/`, `/assets/*`). Every response carries the headers; every
//! request but `/healthz` (probes name the node any way they like) passes
//! the guard first.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::assets;
use super::guard::{Facts, Policy, Verdict, forwarded_host};

/// The page's Content-Security-Policy: everything from this origin only
/// (`connect-src 'self'` covers the same-origin WebSocket), no inline
/// script or style, no eval, never framed.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("content-security-policy", CSP),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// Routes of the console's pages and assets.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*path}", get(asset))
}

async fn index() -> Response {
    serve(assets::INDEX)
}

async fn asset(Path(path): Path<String>) -> Response {
    match assets::find(&path) {
        Some(a) => serve(a),
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}

fn serve(a: &assets::Asset) -> Response {
    let mut r = a.body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
    // Revalidate every time: the binary (and with it the assets) may change.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The middleware: judges the request (see `guard`), then adds the
/// security headers to whatever answers it.
pub async fn guard(State(policy): State<Arc<Policy>>, req: Request, next: Next) -> Response {
    let mut resp = if req.uri().path() == "/healthz" {
        next.run(req).await
    } else {
        match judge(&policy, req.headers()) {
            Verdict::Allow => next.run(req).await,
            Verdict::Deny(reason) => {
                tracing::info!(path = req.uri().path(), %reason, "refused by the browser guard");
                (StatusCode::FORBIDDEN, format!("forbidden: {reason}\n")).into_response()
            }
        }
    };
    let h = resp.headers_mut();
    for (k, v) in SECURITY_HEADERS {
        h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
    }
    resp
}

/// Reads the guard's facts from the headers. A header given twice, or not
/// as visible text, is refused rather than guessed at.
pub fn judge(policy: &Policy, headers: &HeaderMap) -> Verdict {
    let one = |name: &HeaderName| -> Result<Option<&str>, String> {
        let mut all = headers.get_all(name).iter();
        let first = all.next();
        if all.next().is_some() {
            return Err(format!("{name} given twice"));
        }
        match first {
            None => Ok(None),
            Some(v) => v.to_str().map(Some).map_err(|_| format!("{name} is not text")),
        }
    };
    let forwarded = HeaderName::from_static("forwarded");
    let x_forwarded_host = HeaderName::from_static("x-forwarded-host");
    let read = || -> Result<Facts<'_>, String> {
        let fwd = one(&forwarded)?;
        Ok(Facts {
            host: one(&header::HOST)?,
            origin: one(&header::ORIGIN)?,
            forwarded_host: one(&x_forwarded_host)?.or_else(|| fwd.and_then(forwarded_host)),
            proxied: headers
                .keys()
                .any(|k| *k == forwarded || k.as_str().starts_with("x-forwarded-") || k.as_str() == "x-real-ip"),
        })
    };
    match read() {
        Ok(facts) => policy.judge(&facts),
        Err(reason) => Verdict::Deny(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn headers_become_facts() {
        let p = Policy::new("127.0.0.1:7767".parse().expect("addr"), &["warren.example".into()], &[]);
        assert_eq!(judge(&p, &headers(&[("host", "127.0.0.1:7767")])), Verdict::Allow);
        for bad in [
            headers(&[("host", "127.0.0.1:7767"), ("x-forwarded-for", "1.2.3.4")]),
            headers(&[("host", "127.0.0.1:7767"), ("forwarded", "for=1.2.3.4")]),
            headers(&[("host", "127.0.0.1:7767"), ("x-real-ip", "1.2.3.4")]),
            headers(&[("host", "warren.example"), ("forwarded", "host=evil.example")]),
            headers(&[("host", "127.0.0.1:7767"), ("host", "evil.example")]),
            headers(&[
                ("host", "127.0.0.1:7767"),
                ("origin", "http://127.0.0.1:7767"),
                ("origin", "https://evil.example"),
            ]),
        ] {
            assert!(matches!(judge(&p, &bad), Verdict::Deny(_)), "{bad:?}");
        }
        assert_eq!(
            judge(
                &p,
                &headers(&[("host", "warren.example"), ("x-forwarded-host", "warren.example")])
            ),
            Verdict::Allow
        );
    }

    #[test]
    fn the_csp_forbids_inline_script_eval_and_framing() {
        assert!(CSP.starts_with("default-src 'self'"));
        assert!(CSP.contains("frame-ancestors 'none'"));
        assert!(!CSP.contains("unsafe-inline") && !CSP.contains("unsafe-eval"));
    }
}
