//! What every request and response passes, whatever its route: the `Host` allowlist (against DNS
//! rebinding: a page on `attacker.example` whose name is made to resolve to 127.0.0.1 must not
//! read the server) and the security headers of every response.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, ServerError};

/// The hosts a loopback server answers to, with any port.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// The `Content-Security-Policy` of every response: the dashboard is server-rendered HTML with
/// inline CSS and inline SVG, no script, nothing from elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; img-src 'self' data:; \
     style-src 'self' 'unsafe-inline'; frame-ancestors 'none'";

/// The headers added to every response (unless the handler set them).
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
];

/// One allowed host: a name (lower case, IPv6 without brackets) and, when given, its port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: String,
    port: Option<u16>,
}

/// Which `Host` values the server answers.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// `None`: any host (a server on another address with no `--allowed-host`).
    allowed: Option<Vec<Allowed>>,
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// `NAME`, `NAME:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6 address.
fn parse_allowed(entry: &str) -> Option<Allowed> {
    let e = entry.trim();
    if e.is_empty()
        || e.len() > 253
        || e.chars()
            .any(|c| c.is_whitespace() || c.is_control() || "/?#@*".contains(c))
    {
        return None;
    }
    if let Ok(a) = e.parse::<axum::http::uri::Authority>() {
        return Some(Allowed {
            host: normalize(a.host()),
            port: a.port_u16(),
        });
    }
    e.parse::<std::net::Ipv6Addr>().ok().map(|ip| Allowed {
        host: ip.to_string(),
        port: None,
    })
}

impl Default for HostPolicy {
    /// A loopback server's: [`LOOPBACK_HOSTS`] only.
    fn default() -> HostPolicy {
        HostPolicy {
            allowed: Some(
                LOOPBACK_HOSTS
                    .iter()
                    .filter_map(|h| parse_allowed(h))
                    .collect(),
            ),
        }
    }
}

impl HostPolicy {
    /// On a `loopback` address: [`LOOPBACK_HOSTS`] and the `extra` names; on another address:
    /// any host, unless `extra` names some (then those and [`LOOPBACK_HOSTS`]).
    pub fn new(loopback: bool, extra: &[String]) -> Result<HostPolicy, ServerError> {
        if !loopback && extra.is_empty() {
            return Ok(HostPolicy { allowed: None });
        }
        let mut allowed = HostPolicy::default().allowed.unwrap_or_default();
        for e in extra {
            let a = parse_allowed(e).ok_or_else(|| {
                ServerError::config(
                    format!("--allowed-host {e:?} is not a host name"),
                    Some("write a name or address, with a port when only that port may be named: --allowed-host ys.example.com, --allowed-host 10.0.0.5:8686"),
                )
            })?;
            allowed.push(a);
        }
        Ok(HostPolicy {
            allowed: Some(allowed),
        })
    }

    /// Whether a request for `authority` (a `Host` header's value) is answered.
    pub fn allows(&self, authority: &str) -> bool {
        let Some(allowed) = &self.allowed else {
            return true;
        };
        let Ok(a) = authority.parse::<axum::http::uri::Authority>() else {
            return false;
        };
        if a.as_str().contains('@') {
            return false;
        }
        let host = normalize(a.host());
        let port = a.port_u16();
        allowed
            .iter()
            .any(|x| x.host == host && x.port.is_none_or(|p| Some(p) == port))
    }
}

/// Clips a client's text for an error message or a log line: at most `max` bytes, on a
/// character boundary, with `…` when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Middleware: refuses (403, JSON) a request whose `Host` the policy does not allow.
pub(crate) async fn check_host(
    State(policy): State<Arc<HostPolicy>>,
    req: Request,
    next: Next,
) -> Response {
    if policy.allowed.is_none() {
        return next.run(req).await;
    }
    let host = req
        .headers()
        .get(header::HOST)
        .map(|v| v.to_str().unwrap_or("\u{fffd}").to_string())
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let hint = "this server answers only requests for localhost, 127.0.0.1 or [::1] (against DNS \
                rebinding); to reach it under another name, start it with --allowed-host NAME";
    let Some(host) = host else {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "the request names no host (no Host header)",
            Some(hint),
        )
        .into_response();
    };
    if policy.allows(&host) {
        return next.run(req).await;
    }
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "the host {:?} is not one this server answers to",
            clip(&host, 100)
        ),
        Some(hint),
    )
    .into_response()
}

/// Middleware: adds [`SECURITY_HEADERS`] to every response.
pub(crate) async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers
            .entry(HeaderName::from_static(name))
            .or_insert_with(|| HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_answers_loopback_names_on_any_port_and_the_allowed_ones() {
        let p = HostPolicy::new(true, &["ys.example.com".into(), "10.0.0.5:8686".into()]).unwrap();
        for ok in [
            "localhost",
            "LOCALHOST:8686",
            "127.0.0.1:1",
            "[::1]:8686",
            "[::1]",
            "localhost.",
            "ys.example.com:443",
            "10.0.0.5:8686",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for no in [
            "attacker.example",
            "attacker.example:8686",
            "127.0.0.2",
            "10.0.0.5:8687",
            "10.0.0.5",
            "localhost.attacker.example",
            "user@localhost",
            "",
            "local host",
        ] {
            assert!(!p.allows(no), "{no}");
        }
        let any = HostPolicy::new(false, &[]).unwrap();
        assert!(any.allows("attacker.example"));
        let named = HostPolicy::new(false, &["ys.example.com".into()]).unwrap();
        assert!(named.allows("ys.example.com:8686"));
        assert!(!named.allows("attacker.example"));
        assert!(HostPolicy::new(true, &["::1".into()]).is_ok());
        for bad in ["", "a b", "http://x", "*.example.com", "x/y"] {
            let e = HostPolicy::new(true, &[bad.into()]).unwrap_err();
            assert!(e.to_string().contains("--allowed-host"), "{bad}: {e}");
        }
    }

    #[test]
    fn clip_cuts_on_a_character_boundary() {
        assert_eq!(clip("GET", 16), "GET");
        assert_eq!(
            clip(&"A".repeat(400_000), 16),
            format!("{}…", "A".repeat(16))
        );
        assert_eq!(clip("ééé", 3), "é…");
    }
}
