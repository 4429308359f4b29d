//! The one function the binary would otherwise take from the C maths
//! library, so `libm.so.6` is not loaded at all.
//!
//! Why: tokio's multi-threaded scheduler calls `f64::powf` (its task poll
//! time average), and that was the binary's only use of `libm.so.6`. Loading
//! the library costs about 0.55 MB of every ccbridge's memory for one
//! function: the dynamic loader runs libm's own start-up (the resolvers
//! that pick each maths function's CPU-specific version), and each page it
//! touches maps the 64 KB around it. Defined here, `pow` is resolved inside
//! the binary, and the linker (which links only the libraries a symbol is
//! taken from) leaves libm out. The implementation is the `libm` crate's,
//! Rust's port of musl's, accurate to within one unit in the last place.
//! Measured in docs/benchmarks.md, "No maths library, packed relocations,
//! a profile of its own".

/// `pow(3)`: `x` raised to the power `y`.
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pow_is_the_c_librarys() {
        assert_eq!(super::pow(2.0, 10.0), 1024.0);
        assert_eq!(super::pow(9.0, 0.5), 3.0);
        assert_eq!(super::pow(2.0, -1.0), 0.5);
        assert!(super::pow(-1.0, 0.5).is_nan());
        assert_eq!(super::pow(0.0, 0.0), 1.0);
    }
}
