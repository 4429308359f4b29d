//! Gathers the code `ccbridge serve` runs from start to idle at the front
//! of the release binary's code, so an idle ccbridge keeps about 1.5 MB of
//! its code in memory instead of 6.5 MB (idle RSS 7 MB instead of 12.5).
//!
//! Why: the kernel maps a program's code in 64 KB blocks around each first
//! call into it (fault-around), and the linker lays functions out by crate
//! and codegen unit. Start-up calls some 2,300 functions (0.9 MB of code)
//! spread over nearly every block of the 11 MB of code, so all of them
//! stayed resident. `startup.ld` names those functions, by their v0 symbol
//! names with the crate hashes left out (`.cargo/config.toml` asks for v0
//! mangling, which spells out generic arguments), and puts them in a
//! section of their own before `.text`. A function it no longer names is
//! only laid out as before; nothing breaks. `scripts/startup-order`
//! regenerates it (docs/benchmarks.md, "Start-up code gathered in one place").
//!
//! Applied to release builds on Linux with the default linker (rust-lld or
//! GNU ld; both take a script that `INSERT`s); a build that names its own
//! linker, or sets `CCBRIDGE_NO_STARTUP_ORDER`, links as before.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=startup.ld");
    println!("cargo:rerun-if-env-changed=CCBRIDGE_NO_STARTUP_ORDER");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    // "release" for every profile that inherits from release.
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = flags.contains("fuse-ld") || flags.contains("linker");
    if !linux || !release || own_linker || env::var_os("CCBRIDGE_NO_STARTUP_ORDER").is_some() {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = Path::new(&dir).join("startup.ld");
    if !script.exists() {
        println!("cargo:warning=no startup.ld: start-up code not gathered (scripts/startup-order)");
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=ccbridge=-Wl,-T,{}",
        script.display()
    );
}
