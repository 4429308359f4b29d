//! Reading a bearer token off a request, the same way on every server.
//!
//! The page's API (a session), the workspace tools and the companions (a
//! per-start token) all take `Authorization: Bearer <token>` and nothing
//! else: exactly one such header (two are ambiguous: which one would a
//! proxy or the next check read?), the scheme in any case, the token
//! trimmed. The comparison itself is `ccbridge_server::token::AuthToken`'s
//! (SHA-256 digests in constant time) for every server and the IDE port.

use axum::http::header::AUTHORIZATION;
use axum::http::HeaderMap;

/// The token of the one `Authorization: Bearer <token>` header, if the
/// request has exactly one and it is a bearer token.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut given = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (given.next(), given.next()) else {
        return None;
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::bearer;
    use axum::http::{HeaderMap, HeaderValue};

    fn with(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("authorization", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn one_bearer_header_only() {
        assert_eq!(bearer(&with(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer(&with(&["bearer  abc "])), Some("abc"));
        assert_eq!(bearer(&with(&["Basic abc"])), None);
        assert_eq!(bearer(&with(&["Bearer"])), None);
        assert_eq!(bearer(&with(&["Bearer "])), None);
        assert_eq!(bearer(&with(&["Bearer a", "Bearer a"])), None);
        assert_eq!(bearer(&with(&[])), None);
    }
}
