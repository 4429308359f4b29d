//! Registering the tools server with Claude Code: an `http` entry in the
//! `mcpServers` of the workspace's project in Claude's `.claude.json`
//! (`$CLAUDE_CONFIG_DIR/.claude.json` when that variable is set, else
//! `~/.claude.json`), the same entry `claude mcp add --transport http`
//! writes in its default (local) scope. Claude reads it when it starts.
//!
//! The file is Claude's, and holds much more than this entry, so it is
//! handled with care: read whole, changed in memory, written to a temporary
//! file beside it (same permissions) and renamed over it, so a crash never
//! leaves half a file; left alone, with an error, when it is not valid
//! JSON; not written at all when the entry is already right. Entries are
//! removed only when they hold this run's URL and token, which nobody but
//! this run can have written for it.
//!
//! Key order is not kept (Claude reorders the file on its next write
//! anyway); values are.

use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::lockfile::replace_file;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The name the entry goes under (`mcp__ccbridge__<tool>` in Claude).
pub const SERVER_NAME: &str = "ccbridge";
/// Claude Code's permission rule that allows every tool of the server
/// (`mcp__<server>`): its writes and commands are asked about in the
/// editor, so the terminal need not ask first.
pub const PERMISSION_RULE: &str = "mcp__ccbridge";

/// The `mcpServers` entry of the server at `e`.
pub fn entry(e: &McpEndpoint) -> Value {
    json!({
        "type": "http",
        "url": e.url,
        "headers": { "Authorization": format!("Bearer {}", e.token) },
    })
}

/// The `claude mcp add` command that registers the server at `e`.
pub fn command(e: &McpEndpoint) -> String {
    format!(
        "claude mcp add --transport http {SERVER_NAME} {} --header \"Authorization: Bearer {}\"",
        e.url, e.token
    )
}

/// Where Claude keeps its `.claude.json`.
pub fn config_path() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir).join(".claude.json")),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".claude.json")),
    }
}

/// What [`register`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    Added,
    /// An older entry of that name was replaced.
    Replaced,
    /// The entry was already right; the file was not written.
    Unchanged,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("{} is not valid JSON ({error}); it was left untouched", path.display())]
    NotJson {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{} does not hold a JSON object; it was left untouched", path.display())]
    NotAnObject { path: PathBuf },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RegistrationError + '_ {
    move |error| RegistrationError::Io {
        path: path.to_owned(),
        error,
    }
}

/// The file's JSON object; an empty one when the file does not exist.
fn read(path: &Path) -> Result<(Map<String, Value>, bool), RegistrationError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Map::new(), false)),
        Err(e) => return Err(io(path)(e)),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok((m, true)),
        Ok(_) => Err(RegistrationError::NotAnObject {
            path: path.to_owned(),
        }),
        Err(error) => Err(RegistrationError::NotJson {
            path: path.to_owned(),
            error,
        }),
    }
}

/// Replaces the file with `config`, atomically, keeping its permissions
/// (0600 for a new file: it holds tokens). A symbolic link (a dotfiles
/// manager keeps `~/.claude.json` in a repository and links it) is written
/// through: replacing the link would take the file out of the user's
/// dotfiles. A link to nothing is an error, not a new file beside it.
fn write(path: &Path, config: &Map<String, Value>) -> Result<(), RegistrationError> {
    use std::os::unix::fs::PermissionsExt;
    let target;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            target = std::fs::canonicalize(path).map_err(io(path))?;
            target.as_path()
        }
        _ => path,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let mut text = serde_json::to_string_pretty(config)
        .map_err(std::io::Error::other)
        .map_err(io(path))?;
    text.push('\n');
    replace_file(path, text.as_bytes(), mode).map_err(io(path))
}

/// Upserts the entry into the `mcpServers` of the project `workspace`.
pub fn register(
    path: &Path,
    workspace: &str,
    endpoint: &McpEndpoint,
) -> Result<Registered, RegistrationError> {
    let (mut config, _) = read(path)?;
    let projects = object(&mut config, "projects");
    let project = object(projects, workspace);
    let servers = object(project, "mcpServers");
    let wanted = entry(endpoint);
    let outcome = match servers.get(SERVER_NAME) {
        Some(old) if *old == wanted => return Ok(Registered::Unchanged),
        Some(_) => Registered::Replaced,
        None => Registered::Added,
    };
    servers.insert(SERVER_NAME.to_owned(), wanted);
    write(path, &config)?;
    Ok(outcome)
}

/// Removes every entry holding this endpoint (any project); returns
/// whether there was one. A file that is missing or not JSON is left alone.
pub fn unregister(path: &Path, endpoint: &McpEndpoint) -> Result<bool, RegistrationError> {
    let (mut config, exists) = read(path)?;
    if !exists {
        return Ok(false);
    }
    let wanted = entry(endpoint);
    let mut removed = false;
    if let Some(Value::Object(projects)) = config.get_mut("projects") {
        for project in projects.values_mut() {
            if let Some(Value::Object(servers)) = project.get_mut("mcpServers") {
                let before = servers.len();
                servers.retain(|_, v| *v != wanted);
                removed |= servers.len() != before;
            }
        }
    }
    if removed {
        write(path, &config)?;
    }
    Ok(removed)
}

/// `map[key]` as an object, made one if it is missing or something else.
fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> McpEndpoint {
        McpEndpoint {
            url: "http://127.0.0.1:4242/mcp".into(),
            token: "t0k".into(),
        }
    }

    #[test]
    fn an_entry_is_added_kept_and_removed_and_the_rest_survives() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(
            &path,
            r#"{"hasCompletedOnboarding": true, "projects": {"/ws": {"allowedTools": ["x"], "mcpServers": {"other": {"type": "stdio", "command": "y"}}}}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            register(&path, "/ws", &endpoint()).unwrap(),
            Registered::Added
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["hasCompletedOnboarding"], true);
        assert_eq!(v["projects"]["/ws"]["allowedTools"], json!(["x"]));
        assert_eq!(v["projects"]["/ws"]["mcpServers"]["other"]["command"], "y");
        assert_eq!(
            v["projects"]["/ws"]["mcpServers"]["ccbridge"]["headers"]["Authorization"],
            "Bearer t0k"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);

        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(
            register(&path, "/ws", &endpoint()).unwrap(),
            Registered::Unchanged
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );

        // Another run's entry is not ours to remove.
        let other = McpEndpoint {
            token: "else".into(),
            ..endpoint()
        };
        assert!(!unregister(&path, &other).unwrap());
        assert!(unregister(&path, &endpoint()).unwrap());
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(v["projects"]["/ws"]["mcpServers"].get("ccbridge").is_none());
        assert_eq!(v["projects"]["/ws"]["mcpServers"]["other"]["command"], "y");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left");
    }

    #[test]
    fn a_file_that_is_not_json_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(&path, "{ half").unwrap();
        let e = register(&path, "/ws", &endpoint()).unwrap_err();
        assert!(e.to_string().contains("left untouched"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ half");
        assert!(!unregister(&path, &endpoint()).is_ok_and(|r| r));
    }

    /// `~/.claude.json` linked from a dotfiles repository was replaced by
    /// a regular file: the link gone, the repository's copy left behind.
    #[test]
    fn regression_a_linked_file_is_written_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles").join("claude.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, r#"{"theme": "dark"}"#).unwrap();
        let link = dir.path().join(".claude.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            register(&link, "/ws", &endpoint()).unwrap(),
            Registered::Added
        );
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let config: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(config["theme"], "dark");
        assert!(
            config["projects"]["/ws"]["mcpServers"][SERVER_NAME].is_object(),
            "{config}"
        );
        // Dangling: an error, and no file made in the link's place.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere.json"), &dangling).unwrap();
        assert!(register(&dangling, "/ws", &endpoint()).is_err());
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_missing_file_is_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf").join(".claude.json");
        assert_eq!(
            register(&path, "/ws", &endpoint()).unwrap(),
            Registered::Added
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(command(&endpoint()).contains("--header \"Authorization: Bearer t0k\""));
    }
}
