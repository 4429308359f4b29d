//! Two link-time choices that keep an idle ccbridge small in memory
//! (docs/benchmarks.md, "Start-up code gathered in one place" and "No maths
//! library, packed relocations, a profile of its own"). Both apply
//! to release builds on Linux with the default linker (rust-lld or GNU ld);
//! a build that names its own linker links as before.
//!
//! **Start-up code first.** Gathers the code `ccbridge serve` runs from
//! start to idle at the front of the binary's code, so an idle ccbridge
//! keeps about 1.5 MB of its code in memory instead of 6.5 MB. Why: the
//! kernel maps a program's code in 64 KB blocks around each first call into
//! it (fault-around), and the linker lays functions out by crate and codegen
//! unit. Start-up calls some 2,300 functions (0.9 MB of code) spread over
//! nearly every block of the 11 MB of code, so all of them stayed resident.
//! `startup.ld` names those functions, by their v0 symbol names with the
//! crate hashes left out (`.cargo/config.toml` asks for v0 mangling, which
//! spells out generic arguments), and puts them in a section of their own
//! before `.text`. A function it no longer names is only laid out as
//! before; nothing breaks. `scripts/startup-order` regenerates it.
//! `CCBRIDGE_NO_STARTUP_ORDER` turns it off.
//!
//! **Packed relative relocations** (`-z pack-relative-relocs`). The dynamic
//! loader reads every relocation at start: 0.66 MB of them, nearly all
//! "add the load address here", which the packed form (`DT_RELR`) writes in
//! a few kilobytes. Only glibc 2.36 and later can load such a binary, so it
//! is done only for a build for the machine building it (target = host)
//! whose glibc is 2.36 or later; `CCBRIDGE_NO_PACKED_RELOCS` turns it off
//! (a binary built to be copied to machines with an older glibc).

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=startup.ld");
    println!("cargo:rerun-if-env-changed=CCBRIDGE_NO_STARTUP_ORDER");
    println!("cargo:rerun-if-env-changed=CCBRIDGE_NO_PACKED_RELOCS");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    // "release" for every profile that inherits from release.
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = flags.contains("fuse-ld") || flags.contains("linker");
    if !linux || !release || own_linker {
        return;
    }
    if env::var_os("CCBRIDGE_NO_STARTUP_ORDER").is_none() {
        gather_startup_code();
    }
    if env::var_os("CCBRIDGE_NO_PACKED_RELOCS").is_none() && loader_reads_packed_relocations() {
        println!("cargo:rustc-link-arg-bin=ccbridge=-Wl,-z,pack-relative-relocs");
    }
}

fn gather_startup_code() {
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

/// Whether the binary is built for this machine and this machine's glibc
/// (2.36 or later) loads packed relative relocations.
fn loader_reads_packed_relocations() -> bool {
    let native = env::var("TARGET").ok() == env::var("HOST").ok();
    let gnu = env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    native && gnu && host_glibc().is_some_and(|version| version >= (2, 36))
}

/// The version of the glibc this build script runs on (`major.minor`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc() -> Option<(u32, u32)> {
    extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a pointer to a static, NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().ok()?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc() -> Option<(u32, u32)> {
    None
}
