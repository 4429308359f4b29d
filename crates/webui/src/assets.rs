//! The page, embedded in the binary: no Node toolchain at `cargo build`
//! time, no files to install beside the binary.
//!
//! `crates/webui/dist/` is built from `crates/webui/ui/` by
//! `scripts/build-ui` and committed; `dist/BUILD-INPUTS.sha256` records the
//! hashes of the sources it was built from and of what came out, and a test
//! checks the committed bundle still matches its sources.

/// The page shell; `{{NONCE}}` is replaced per response.
pub const INDEX_HTML: &str = include_str!("../dist/index.html");
/// `dist/app.js`, gzip-compressed by `build.rs` (served as it is).
pub const APP_JS_GZ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/app.js.gz"));
pub const APP_CSS: &[u8] = include_bytes!("../dist/app.css");

/// What `scripts/build-ui` recorded: the hashes of the sources and of what
/// came out of them.
const BUILD_MANIFEST: &str = include_str!("../dist/BUILD-INPUTS.sha256");

/// The entity tag of a built file (`dist/app.js`, `dist/app.css`): its
/// SHA-256 from the build manifest, so a browser revalidates the bundle
/// instead of downloading and compiling it again on every load (Chromium
/// keeps its compiled code only for a response it may reuse). `None` for a
/// file the manifest does not name.
pub fn etag(path: &str) -> Option<String> {
    BUILD_MANIFEST.lines().find_map(|l| {
        let (hash, p) = l.split_once("  ")?;
        (p == path).then(|| format!("\"{hash}\""))
    })
}

/// The shell with `nonce` in place.
pub fn index_html(nonce: &str) -> String {
    INDEX_HTML.replace("{{NONCE}}", nonce)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundle_has_an_entity_tag_and_unknown_files_none() {
        let tag = super::etag("dist/app.js").unwrap();
        assert_eq!(tag.len(), 66, "{tag}");
        assert!(tag.starts_with('"') && tag.ends_with('"'));
        assert_ne!(super::etag("dist/app.css"), Some(tag));
        assert_eq!(super::etag("dist/nothing.js"), None);
    }

    use sha2::{Digest, Sha256};
    use std::path::{Path, PathBuf};

    /// This crate's folder in the checkout under test (`cargo test` says
    /// which): a test binary may be reused from an earlier clone.
    fn crate_dir() -> PathBuf {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
    }

    fn files_under(dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                files_under(&p, out);
            } else {
                let rel = p.strip_prefix(crate_dir()).unwrap();
                out.push(rel.display().to_string());
            }
        }
    }

    /// The committed bundle was built from the committed sources: every
    /// input and output hash in `dist/BUILD-INPUTS.sha256` holds, and every
    /// source file is in it. A source changed without `scripts/build-ui`
    /// fails here (the test command also rebuilds and compares bytes).
    #[test]
    fn the_committed_bundle_matches_its_sources() {
        let manifest =
            std::fs::read_to_string(crate_dir().join("dist/BUILD-INPUTS.sha256")).unwrap();
        let mut listed = Vec::new();
        for line in manifest.lines() {
            let (hash, path) = line.split_once("  ").expect("`<sha256>  <path>`");
            let bytes = std::fs::read(crate_dir().join(path))
                .unwrap_or_else(|e| panic!("{path} is in the manifest but: {e}"));
            let actual = format!("{:x}", Sha256::digest(&bytes));
            assert_eq!(
                actual, hash,
                "{path} changed since the bundle was built: run scripts/build-ui"
            );
            listed.push(path.to_owned());
        }
        let mut sources = vec![
            "ui/package.json".to_owned(),
            "ui/package-lock.json".to_owned(),
            "ui/tsconfig.json".to_owned(),
            "ui/build.mjs".to_owned(),
        ];
        files_under(&crate_dir().join("ui/src"), &mut sources);
        files_under(&crate_dir().join("ui/static"), &mut sources);
        for s in &sources {
            assert!(
                listed.contains(s),
                "{s} is not in the bundle's manifest: run scripts/build-ui"
            );
        }
        for out in ["dist/app.js", "dist/app.css", "dist/index.html"] {
            assert!(listed.iter().any(|l| l == out), "{out} unlisted");
        }
        let mut embedded = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(super::APP_JS_GZ),
            &mut embedded,
        )
        .unwrap();
        assert_eq!(
            embedded,
            std::fs::read(crate_dir().join("dist/app.js")).unwrap()
        );
    }
}
