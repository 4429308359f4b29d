//! `Workspace::locate` (where a path the tools are handed lies, before
//! anything is opened) on arbitrary paths, against two folders (`ws` and
//! `other`, beside a `ws-evil` that is not one).
//!
//! Beyond "never panics": a located path lies beneath its folder, compared
//! component by component (`ws-evil` is not beneath `ws`), and holds only
//! plain names; an absolute path is located exactly where it points; a
//! relative one beneath the first folder; nothing with a `..` component, a
//! NUL byte or a `file:` URL is ever located.

#![no_main]

use ccbridge_workspace::Workspace;
use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

fn workspace() -> &'static Workspace {
    static WS: OnceLock<Workspace> = OnceLock::new();
    WS.get_or_init(|| {
        // A fixed place, so seeds can name paths inside it.
        let base = std::env::temp_dir().join("ccbridge-fuzz-locate");
        let folders: Vec<PathBuf> = ["ws", "other"].iter().map(|f| base.join(f)).collect();
        for f in folders.iter().chain([&base.join("ws-evil")]) {
            std::fs::create_dir_all(f).expect("a folder for the workspace");
        }
        Workspace::open(&folders).expect("the workspace opens")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(path) = std::str::from_utf8(data) else {
        return;
    };
    let ws = workspace();
    let Ok(at) = ws.locate(path) else {
        return;
    };
    let p = Path::new(path);
    assert!(
        !path.contains('\0') && !path.starts_with("file:"),
        "{path:?} located"
    );
    assert!(
        p.components().all(|c| c != Component::ParentDir),
        "{path:?} with `..` located"
    );
    assert!(
        at.rel
            .components()
            .all(|c| matches!(c, Component::Normal(_))),
        "{path:?} located as {:?}",
        at.rel
    );
    let folder = ws
        .folders()
        .nth(at.root)
        .expect("a folder of the workspace");
    let abs = ws.absolute(&at);
    assert!(abs.starts_with(folder), "{path:?} located outside: {abs:?}");
    if p.is_absolute() {
        let pointed: PathBuf = p.components().filter(|c| *c != Component::CurDir).collect();
        assert_eq!(abs, pointed, "{path:?} located elsewhere");
    } else {
        assert_eq!(
            at.root, 0,
            "{path:?}: a relative path is the first folder's"
        );
    }
});
