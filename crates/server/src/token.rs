//! The per-start auth token and its constant-time check.
//!
//! The token is the whole defence against a web page or another local user
//! reaching the loopback port (CVE-2025-52882): 256 bits from the OS CSPRNG,
//! written only to the 0600 lock file, never logged (its `Debug` is
//! redacted), and compared as SHA-256 digests with `subtle`, so neither the
//! content nor the length of a guess changes the comparison's timing.

use sha2::{Digest, Sha256};
use std::fmt;
use subtle::ConstantTimeEq;

#[derive(Clone)]
pub struct AuthToken {
    value: String,
    digest: [u8; 32],
}

#[derive(Debug, thiserror::Error)]
#[error("the OS random number generator failed: {0}")]
pub struct RandomError(String);

impl AuthToken {
    /// A fresh token: 32 bytes from the OS CSPRNG, hex-encoded.
    pub fn generate() -> Result<Self, RandomError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| RandomError(e.to_string()))?;
        let mut value = String::with_capacity(64);
        for b in bytes {
            value.push_str(&format!("{b:02x}"));
        }
        Ok(Self::from_value(value))
    }

    pub fn from_value(value: String) -> Self {
        let digest = Sha256::digest(value.as_bytes()).into();
        AuthToken { value, digest }
    }

    /// The token itself, for the lock file only.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// Constant-time check of a presented token.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let d: [u8; 32] = Sha256::digest(presented).into();
        d.ct_eq(&self.digest).into()
    }
}

impl fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tokens_are_long_random_hex_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let t = AuthToken::generate().unwrap();
            assert_eq!(t.expose().len(), 64);
            assert!(t
                .expose()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(seen.insert(t.expose().to_owned()));
        }
    }

    #[test]
    fn matching_is_exact() {
        let t = AuthToken::from_value("abcdef0123456789".into());
        assert!(t.matches(b"abcdef0123456789"));
        for bad in [
            &b""[..],
            b"abcdef012345678",
            b"abcdef0123456789x",
            b"ABCDEF0123456789",
            b"abcdef0123456780",
            b" abcdef0123456789",
        ] {
            assert!(!t.matches(bad), "{bad:?}");
        }
    }

    #[test]
    fn debug_is_redacted() {
        let t = AuthToken::from_value("s3cr3t-value".into());
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }
}
