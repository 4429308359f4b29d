//! Compresses the page's bundle when the crate is built: the binary carries
//! `dist/app.js` gzip-compressed (about a third of its size), and the server
//! sends those bytes as they are, with `Content-Encoding: gzip`, to browsers,
//! which all accept it. The committed bundle stays plain text, so
//! `scripts/build-ui --check` and the manifest's hashes are unchanged.

use std::io::Write;

fn main() {
    let src = "dist/app.js";
    println!("cargo:rerun-if-changed={src}");
    let js = std::fs::read(src).expect("dist/app.js is missing: run scripts/build-ui");
    // mtime 0: the same bundle always compresses to the same bytes.
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    gz.write_all(&js).expect("compress dist/app.js");
    let out =
        std::path::Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("app.js.gz");
    std::fs::write(out, gz.finish().expect("compress dist/app.js")).expect("write app.js.gz");
}
