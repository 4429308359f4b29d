//! `LockFile::parse` and `LockFile::port_from_file_name` on arbitrary bytes.
//!
//! Beyond "never panics": a parsed lock survives a round trip through
//! `to_json`, its `Debug` never shows the token, errors never quote the
//! file, and a port read from a name is the one that name was made from.

#![no_main]

use ccbridge_protocol::lockfile::LockFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match LockFile::parse(data) {
        Ok(lock) => {
            let json = lock.to_json();
            let again = LockFile::parse(json.as_bytes()).expect("to_json parses back");
            assert!(again == lock, "round trip changed the lock file");
            if let Some(token) = lock.auth_token.as_deref().filter(|t| t.len() >= 8) {
                let without = LockFile {
                    auth_token: None,
                    ..lock.clone()
                };
                // Only meaningful when no other field holds the same text.
                if !format!("{without:?}").contains(token) {
                    assert!(
                        !format!("{lock:?}").contains(token),
                        "Debug shows the token"
                    );
                }
            }
        }
        Err(e) => {
            if data.len() >= 8 {
                let text = String::from_utf8_lossy(data);
                assert!(
                    !e.to_string().contains(text.as_ref()),
                    "an error quotes the file"
                );
            }
        }
    }

    let name = String::from_utf8_lossy(data);
    if let Some(port) = LockFile::port_from_file_name(&name) {
        assert_ne!(port, 0);
        assert!(name.ends_with(".lock"));
        assert_eq!(
            LockFile::port_from_file_name(&format!("{port}.lock")),
            Some(port)
        );
    }
});
