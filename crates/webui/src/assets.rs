//! The page, embedded in the binary: no Node toolchain at `cargo build`
//! time, no files to install beside the binary.
//!
//! `crates/webui/dist/` is built from `crates/webui/ui/` by
//! `scripts/build-ui` and committed; `dist/BUILD-INPUTS.sha256` records the
//! hashes of the sources it was built from and of what came out, and a test
//! checks the committed bundle still matches its sources.

/// The page shell; `{{NONCE}}` is replaced per response.
pub const INDEX_HTML: &str = include_str!("../dist/index.html");
pub const APP_JS: &[u8] = include_bytes!("../dist/app.js");
pub const APP_CSS: &[u8] = include_bytes!("../dist/app.css");

/// The shell with `nonce` in place.
pub fn index_html(nonce: &str) -> String {
    INDEX_HTML.replace("{{NONCE}}", nonce)
}
