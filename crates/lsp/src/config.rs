//! A workspace folder's own language-server setup: `.ccbridge/lsp.toml`.
//!
//! ```toml
//! [servers.ruff]
//! enabled = false                 # never started in this folder
//!
//! [servers.pyright]
//! command = "/opt/pyright/bin/pyright-langserver"   # or a name, searched
//! args = ["--stdio"]
//! # Sent as `initializationOptions` in `initialize`.
//! initialization_options = { }
//! # Answered to the server's `workspace/configuration` requests, by
//! # section ("python.analysis" is `settings.python.analysis`).
//! settings = { python = { analysis = { diagnosticSeverityOverrides = { reportAssignmentType = "warning" } } } }
//! ```
//!
//! Servers are named as in [`crate::servers::SERVERS`] (`pyright`, `ruff`,
//! `typescript`, `clangd`, `rust-analyzer`); a server not named keeps its
//! defaults. Why a file in the workspace rather than options of `ccbridge
//! serve`: what a project's checkers need (their settings, a venv's server)
//! belongs to the project, and is shared by whoever opens it.
//!
//! A file that cannot be read as such (bad TOML, an unknown key or server,
//! a wrong type) is an error naming the file and the line; the caller
//! reports it and goes on with the defaults, so a typo never costs the
//! diagnostics, and is never silently ignored either.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a workspace folder's configuration is, relative to the folder.
pub const FILE: &str = ".ccbridge/lsp.toml";

/// Files larger than this are refused rather than read.
const MAX_CONFIG: u64 = 1 << 20;

/// One workspace folder's configuration; the default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// By server name.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

/// One server's setup in a folder; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `false`: never started (and not reported missing).
    pub enabled: Option<bool>,
    /// The program: a path (used as is) or a name (searched like the
    /// defaults, in the explicit directories then `PATH`).
    pub command: Option<String>,
    /// Replace the default arguments.
    pub args: Option<Vec<String>>,
    /// `initializationOptions` of `initialize`.
    pub initialization_options: Option<toml::Value>,
    /// What `workspace/configuration` is answered, by section.
    pub settings: Option<toml::Value>,
}

/// Why a configuration file was not used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot be read: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: larger than {MAX_CONFIG} bytes", file.display())]
    TooLarge { file: PathBuf },
    #[error("{}:{line}: {message}", file.display())]
    Invalid {
        file: PathBuf,
        /// 1-based.
        line: usize,
        message: String,
    },
}

impl ServerConfig {
    pub fn enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    /// `initializationOptions` as JSON (`None`: not sent).
    pub fn initialization_options(&self) -> Option<Value> {
        self.initialization_options.as_ref().map(json)
    }

    /// The answer to one `workspace/configuration` item: the settings
    /// under `section` (dotted), all of them without one, `null` when
    /// there is nothing there.
    pub fn section(&self, section: Option<&str>) -> Value {
        let Some(settings) = &self.settings else {
            return Value::Null;
        };
        let mut at = settings;
        for part in section.into_iter().flat_map(|s| s.split('.')) {
            if part.is_empty() {
                continue;
            }
            match at.get(part) {
                Some(v) => at = v,
                None => return Value::Null,
            }
        }
        json(at)
    }
}

impl Config {
    /// The setup of the server named `name` (the default when not named).
    pub fn server(&self, name: &str) -> ServerConfig {
        self.servers.get(name).cloned().unwrap_or_default()
    }

    /// Reads `text` as the configuration in `file` (named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let invalid = |line, message: String| ConfigError::Invalid {
            file: file.to_owned(),
            line,
            message,
        };
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            invalid(line, e.message().trim().to_owned())
        })?;
        let known: Vec<&str> = crate::servers::SERVERS.iter().map(|s| s.name).collect();
        for name in config.servers.keys() {
            if !known.contains(&name.as_str()) {
                let line = find_line(text, name);
                return Err(invalid(
                    line,
                    format!("no server is named `{name}` (known: {})", known.join(", ")),
                ));
            }
        }
        Ok(config)
    }

    /// The configuration of the workspace folder `root` ([`FILE`] in it);
    /// `Ok(None)` when it has none.
    pub fn load(root: &Path) -> Result<Option<Config>, ConfigError> {
        let file = root.join(FILE);
        let read = |source| ConfigError::Read {
            file: file.clone(),
            source,
        };
        match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read(e)),
            Ok(m) if m.len() > MAX_CONFIG => return Err(ConfigError::TooLarge { file }),
            Ok(_) => {}
        }
        let text = std::fs::read_to_string(&file).map_err(read)?;
        Config::parse(&text, &file).map(Some)
    }
}

/// What tells one version of a folder's configuration file from the next
/// without reading it: its modification time and size, `None` when there
/// is no file.
pub type Stamp = Option<(std::time::SystemTime, u64)>;

/// The [`Stamp`] of `root`'s configuration file now.
pub fn stamp(root: &Path) -> Stamp {
    let m = std::fs::metadata(root.join(FILE)).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The first line that names the table of server `name` (1 if none does).
fn find_line(text: &str, name: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim();
            l.starts_with('[') && l.contains(name) || l.starts_with(&format!("{name} "))
        })
        .map_or(1, |i| i + 1)
}

/// TOML as JSON (dates become their text).
fn json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.clone(), json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/w/.ccbridge/lsp.toml"))
    }

    #[test]
    fn servers_are_turned_off_and_set_up_by_name() {
        let c = parse(
            r#"
[servers.ruff]
enabled = false

[servers.pyright]
command = "/opt/bin/pyright-langserver"
args = ["--stdio", "--verbose"]
initialization_options = { a = 1 }
settings = { python = { analysis = { typeCheckingMode = "strict", extraPaths = ["lib"] } } }
"#,
        )
        .unwrap();
        assert!(!c.server("ruff").enabled());
        assert!(c.server("clangd").enabled(), "not named: defaults");
        let p = c.server("pyright");
        assert!(p.enabled());
        assert_eq!(p.command.as_deref(), Some("/opt/bin/pyright-langserver"));
        assert_eq!(
            p.args.as_deref(),
            Some(&["--stdio".to_owned(), "--verbose".to_owned()][..])
        );
        assert_eq!(p.initialization_options(), Some(json!({"a": 1})));
        assert_eq!(
            p.section(Some("python.analysis")),
            json!({"typeCheckingMode": "strict", "extraPaths": ["lib"]})
        );
        assert_eq!(
            p.section(Some("python.analysis.typeCheckingMode")),
            json!("strict")
        );
        assert_eq!(p.section(Some("python.missing")), Value::Null);
        assert_eq!(
            p.section(Some("python")),
            json!({"analysis": {"typeCheckingMode": "strict", "extraPaths": ["lib"]}})
        );
        assert_eq!(c.server("ruff").section(Some("python")), Value::Null);
        assert_eq!(parse("").unwrap(), Config::default());
    }

    /// The error's text, checked to be an `Invalid` at `line`.
    fn invalid_at(text: &str, line: usize) -> String {
        match parse(text) {
            Err(e @ ConfigError::Invalid { line: l, .. }) => {
                assert_eq!(l, line, "{e}");
                let s = e.to_string();
                assert!(
                    s.starts_with(&format!("/w/.ccbridge/lsp.toml:{line}: ")),
                    "{s}"
                );
                s
            }
            other => panic!("not an error at line {line}: {other:?}"),
        }
    }

    #[test]
    fn bad_files_are_errors_naming_the_file_and_line() {
        // Not TOML.
        invalid_at("[servers.ruff]\nenabled = false\nargs = [\"server\"\n", 3);
        // A wrong type.
        let e = invalid_at("\n[servers.ruff]\nenabled = \"no\"\n", 3);
        assert!(e.contains("bool"), "{e}");
        // An unknown key: a typo is said, not ignored.
        let e = invalid_at("[servers.ruff]\nenabeld = false\n", 2);
        assert!(e.contains("enabeld"), "{e}");
        // An unknown server.
        let e = invalid_at("# mine\n\n[servers.mypy]\nenabled = false\n", 3);
        assert!(e.contains("mypy") && e.contains("pyright"), "{e}");
        invalid_at("[other]\n", 1);
    }

    #[test]
    fn a_folder_without_a_file_has_none_and_a_bad_one_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(Config::load(d.path()).unwrap().is_none());
        std::fs::create_dir(d.path().join(".ccbridge")).unwrap();
        std::fs::write(d.path().join(FILE), "[servers.ruff\n").unwrap();
        let e = Config::load(d.path()).unwrap_err();
        assert!(
            e.to_string()
                .contains(&d.path().join(FILE).display().to_string()),
            "{e}"
        );
        std::fs::write(d.path().join(FILE), "[servers.ruff]\nenabled = false\n").unwrap();
        let c = Config::load(d.path()).unwrap().unwrap();
        assert!(!c.server("ruff").enabled());
    }
}
