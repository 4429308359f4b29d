//! Who may use the page's API, and the checks every request passes first.
//!
//! The UI port is on loopback, where every local process and (through the
//! browser) every web page can reach it. So, before any handler runs
//! (docs/web-ui.md, "Security model"):
//!
//! - `Host` must be a loopback name, with any port (else 421): a
//!   DNS-rebound name never gets an answer, and `ssh -L 9000:127.0.0.1:<port>`
//!   (whose browser sends `Host: 127.0.0.1:9000`) does;
//! - `Origin`, when present, must be the page's own as the `Host` sent names
//!   it (else 403), and no CORS header is ever sent, so another site can
//!   neither read nor write;
//! - `/api/*` needs the page's session, sent as `Authorization: Bearer
//!   <session>`, except `POST /api/session`, which trades a one-time link
//!   token for one (wrong tokens are delayed like on the IDE port). Not a
//!   cookie: cookies are not kept apart by port, and `SameSite` counts
//!   every port of 127.0.0.1 as the same site, so a cookie would reach
//!   every other server on loopback (any local user's) with the browser's
//!   next request there. The page keeps the session in its origin's
//!   storage, which no other port can read, and a header is sent only by
//!   the page's own code;
//! - a `POST` must be `application/json` (else 415): HTML forms and
//!   `no-cors` fetches cannot send that, so no cross-site request changes
//!   anything; there is no state change on `GET`;
//! - every answer carries `nosniff`, `no-referrer`, `frame-ancestors 'none'`
//!   and, for the API, `no-store`. The page's CSP is set where it is served.

use axum::http::HeaderMap;
use ccbridge_http::auth::bearer;
use ccbridge_server::refusals::AuthThrottle;
use ccbridge_server::token::AuthToken;
use std::sync::Mutex;

/// One-time link tokens, the sessions they turned into, and the token
/// that only makes links (for `ccbridge link`, from the lock file).
#[derive(Default)]
pub struct Credentials {
    inner: Mutex<Stored>,
    pub throttle: AuthThrottle,
    linker: Option<AuthToken>,
}

#[derive(Default)]
struct Stored {
    /// Tokens not yet exchanged.
    links: Vec<AuthToken>,
    /// Sessions handed out.
    sessions: Vec<AuthToken>,
}

/// Links and sessions kept at most (old ones are forgotten first).
const MAX_KEPT: usize = 16;

impl Credentials {
    pub fn new() -> Credentials {
        Credentials::default()
    }

    /// With a token that may make links (`POST /api/link`) and nothing
    /// else; its value, to advertise in the lock file.
    pub fn with_linker() -> Option<(Credentials, String)> {
        let t = AuthToken::generate().ok()?;
        let value = t.expose().to_owned();
        Some((
            Credentials {
                linker: Some(t),
                ..Credentials::default()
            },
            value,
        ))
    }

    /// Whether the request carries the link-making token as
    /// `Authorization: Bearer`.
    pub fn may_make_links(&self, headers: &HeaderMap) -> bool {
        match (&self.linker, bearer(headers)) {
            (Some(t), Some(given)) => t.matches(given.as_bytes()),
            _ => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new one-time token, to put in a link.
    pub fn new_link(&self) -> Option<String> {
        let t = AuthToken::generate().ok()?;
        let value = t.expose().to_owned();
        let mut s = self.lock();
        s.links.push(t);
        if s.links.len() > MAX_KEPT {
            s.links.remove(0);
        }
        Some(value)
    }

    /// Trades a link token for a session (the token is used up).
    pub fn exchange(&self, presented: &str) -> Option<String> {
        let mut s = self.lock();
        // Every stored token is compared (in constant time each), so the
        // time taken says nothing about which one matched.
        let mut found = None;
        for (i, t) in s.links.iter().enumerate() {
            if t.matches(presented.as_bytes()) {
                found = Some(i);
            }
        }
        s.links.remove(found?);
        let session = AuthToken::generate().ok()?;
        let value = session.expose().to_owned();
        s.sessions.push(session);
        if s.sessions.len() > MAX_KEPT {
            s.sessions.remove(0);
        }
        Some(value)
    }

    /// Whether a request's headers carry a session we handed out, as
    /// `Authorization: Bearer <session>` (one such header; cookies are
    /// never looked at).
    pub fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(presented) = bearer(headers) else {
            return false;
        };
        let s = self.lock();
        let mut ok = false;
        for t in &s.sessions {
            ok |= t.matches(presented.as_bytes());
        }
        ok
    }
}

/// Whether `host` (a `Host` header) names a loopback server: exactly
/// `127.0.0.1`, `localhost` or `[::1]`, with a port (any port).
///
/// DNS rebinding is about the *name*: a page at `evil.example:<p>` makes its
/// name resolve to 127.0.0.1 and then talks to us as a same-origin page of
/// `evil.example`; its browser sends `Host: evil.example:<p>`, refused here
/// whatever `<p>` is. The port adds nothing to that defence: a browser
/// that sends `Host: 127.0.0.1:<p>` is on a page whose origin is
/// `http://127.0.0.1:<p>`, i.e. loopback already, where only local
/// processes listen. And the port in `Host` is the one the *browser*
/// connected to, which is not ours whenever a forward sits in between
/// (`ssh -L 9000:127.0.0.1:<ours>` gives `Host: 127.0.0.1:9000`). A foreign
/// origin on another loopback port is still refused by [`origin_ok`],
/// which compares the `Origin` with the `Host` actually sent.
pub fn host_ok(host: &str) -> bool {
    let Some((name, p)) = host.rsplit_once(':') else {
        return false;
    };
    !p.is_empty()
        && p.len() <= 5
        && p.bytes().all(|b| b.is_ascii_digit())
        && p.parse::<u16>().is_ok_and(|p| p != 0)
        && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]")
}

/// Whether `origin` is the page's own origin for `host` (the `Host` the
/// request carries, so the forwarded port of `ssh -L` included).
pub fn origin_ok(origin: &str, host: &str) -> bool {
    origin.eq_ignore_ascii_case(&format!("http://{host}"))
}

/// Whether a `Content-Type` is JSON.
pub fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_exact_loopback_names_with_a_port() {
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
            "127.0.0.1:9000",
            "localhost:1",
            "[::1]:65535",
        ] {
            assert!(host_ok(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:+80",
            "127.0.0.1:80:80",
            "localhost.evil.example:8080",
            "127.0.0.1.nip.io:8080",
            "2130706433:8080",
            "",
        ] {
            assert!(!host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn origins_must_be_the_pages_own() {
        assert!(origin_ok("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("http://localhost:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("null", "127.0.0.1:8080"));
        assert!(!origin_ok("http://evil.example:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("https://127.0.0.1:8080", "127.0.0.1:8080"));
        // Through a forward, the page's origin is the forwarded port's.
        assert!(origin_ok("http://127.0.0.1:9000", "127.0.0.1:9000"));
        assert!(!origin_ok("http://127.0.0.1:8080", "127.0.0.1:9000"));
    }

    #[test]
    fn a_link_token_works_once_and_only_its_session_header_authorizes() {
        let c = Credentials::new();
        let link = c.new_link().unwrap();
        assert_eq!(c.exchange("0000"), None);
        let session = c.exchange(&link).unwrap();
        assert_eq!(c.exchange(&link), None, "a token is used up");
        let headers = |pairs: &[(&str, String)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        assert!(c.authorized(&headers(&[("authorization", format!("Bearer {session}"))])));
        assert!(c.authorized(&headers(&[("authorization", format!("bearer {session}"))])));
        assert!(!c.authorized(&headers(&[("authorization", format!("Bearer {link}"))])));
        assert!(!c.authorized(&headers(&[("authorization", session.clone())])));
        // A cookie carrying the session is not a credential.
        assert!(!c.authorized(&headers(&[(
            "cookie",
            format!("ccbridge_ui_8080={session}")
        )])));
        // Two Authorization headers: which one counts would be ambiguous.
        assert!(!c.authorized(&headers(&[
            ("authorization", format!("Bearer {session}")),
            ("authorization", "Bearer x".into()),
        ])));
        assert!(!c.authorized(&HeaderMap::new()));
    }

    #[test]
    fn json_content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }
}
