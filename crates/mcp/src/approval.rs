//! When the user is asked: `write-only` (the default: writes are reviewed
//! and commands approved; reads are not asked about), `always` (every tool
//! call, reads included), `never` (nothing is asked; writes still land
//! atomically and commands still show their output). Set by `ccbridge
//! serve --approval-mode` and by the editor's `initialize`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    #[default]
    WriteOnly,
    Always,
    Never,
}

impl ApprovalMode {
    /// Writes and commands are shown to the user first.
    pub fn asks_for_changes(self) -> bool {
        self != ApprovalMode::Never
    }

    /// Reads are asked about too.
    pub fn asks_for_reads(self) -> bool {
        self == ApprovalMode::Always
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::WriteOnly => "write-only",
            ApprovalMode::Always => "always",
            ApprovalMode::Never => "never",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not one of the three modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval mode {0:?}: use write-only, always or never")]
pub struct UnknownMode(pub String);

impl FromStr for ApprovalMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "write-only" => Ok(ApprovalMode::WriteOnly),
            "always" => Ok(ApprovalMode::Always),
            "never" => Ok(ApprovalMode::Never),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_unknown_ones_are_named() {
        for m in [
            ApprovalMode::WriteOnly,
            ApprovalMode::Always,
            ApprovalMode::Never,
        ] {
            assert_eq!(m.as_str().parse::<ApprovalMode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(
            "sometimes".parse::<ApprovalMode>().unwrap_err().to_string(),
            "unknown approval mode \"sometimes\": use write-only, always or never"
        );
    }
}
