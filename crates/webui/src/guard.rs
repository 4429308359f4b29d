//! Who may use the page's API, and the checks every request passes first.
//!
//! The UI port is on loopback, where every local process and (through the
//! browser) every web page can reach it. So, before any handler runs
//! (docs/web-ui.md, "Security model"):
//!
//! - `Host` must be a loopback name with our port (else 421): a DNS-rebound
//!   name never gets an answer;
//! - `Origin`, when present, must be the page's own (else 403), and no CORS
//!   header is ever sent, so another site can neither read nor write;
//! - `/api/*` needs the session cookie, except `POST /api/session`, which
//!   trades a one-time token for one (wrong tokens are delayed like on the
//!   IDE port);
//! - a `POST` must be `application/json` (else 415): HTML forms and
//!   `no-cors` fetches cannot send that, so no cross-site request changes
//!   anything; there is no state change on `GET`;
//! - every answer carries `nosniff`, `no-referrer`, `frame-ancestors 'none'`
//!   and, for the API, `no-store`. The page's CSP is set where it is served.

use ccbridge_server::refusals::AuthThrottle;
use ccbridge_server::token::AuthToken;
use std::sync::Mutex;

/// One-time link tokens and the sessions they turned into.
pub struct Credentials {
    port: u16,
    inner: Mutex<Stored>,
    pub throttle: AuthThrottle,
}

#[derive(Default)]
struct Stored {
    /// Tokens not yet exchanged.
    links: Vec<AuthToken>,
    /// Session cookies handed out.
    sessions: Vec<AuthToken>,
}

/// Links and sessions kept at most (old ones are forgotten first).
const MAX_KEPT: usize = 16;

impl Credentials {
    pub fn new(port: u16) -> Credentials {
        Credentials {
            port,
            inner: Mutex::default(),
            throttle: AuthThrottle::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cookie's name: per port, since cookies are per host, not per
    /// port, and two ccbridge servers on 127.0.0.1 must not share one.
    pub fn cookie_name(&self) -> String {
        format!("ccbridge_ui_{}", self.port)
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

    /// Trades a link token for a session cookie value (the token is used up).
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

    /// Whether a `Cookie` header holds a session we handed out.
    pub fn authorized(&self, cookie_header: &str) -> bool {
        let name = self.cookie_name();
        let s = self.lock();
        cookie_header
            .split(';')
            .filter_map(|c| c.trim().split_once('='))
            .filter(|(k, _)| *k == name)
            .any(|(_, v)| {
                let mut ok = false;
                for t in &s.sessions {
                    ok |= t.matches(v.as_bytes());
                }
                ok
            })
    }
}

/// Whether `host` (a `Host` header) names this loopback server: exactly
/// `127.0.0.1`, `localhost` or `[::1]`, with our port.
pub fn host_ok(host: &str, port: u16) -> bool {
    let want = port.to_string();
    let Some((name, p)) = host.rsplit_once(':') else {
        return false;
    };
    p == want && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]")
}

/// Whether `origin` is the page's own origin for `host`.
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
    fn hosts_are_exact_loopback_names_with_our_port() {
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(host_ok(ok, 8080), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "127.0.0.1",
            "127.0.0.1:8081",
            "localhost.evil.example:8080",
            "127.0.0.1.nip.io:8080",
            "2130706433:8080",
            "",
        ] {
            assert!(!host_ok(bad, 8080), "{bad}");
        }
    }

    #[test]
    fn origins_must_be_the_pages_own() {
        assert!(origin_ok("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("http://localhost:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("null", "127.0.0.1:8080"));
        assert!(!origin_ok("http://evil.example:8080", "127.0.0.1:8080"));
        assert!(!origin_ok("https://127.0.0.1:8080", "127.0.0.1:8080"));
    }

    #[test]
    fn a_link_token_works_once_and_only_its_session_cookie_authorizes() {
        let c = Credentials::new(8080);
        let link = c.new_link().unwrap();
        assert_eq!(c.exchange("0000"), None);
        let session = c.exchange(&link).unwrap();
        assert_eq!(c.exchange(&link), None, "a token is used up");
        let name = c.cookie_name();
        assert!(c.authorized(&format!("a=b; {name}={session}")));
        assert!(!c.authorized(&format!("{name}={link}")));
        assert!(!c.authorized(&format!("ccbridge_ui_9999={session}")));
        assert!(!c.authorized(""));
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
