//! What can be learned about a JSON-RPC message that is too large to keep.
//!
//! A frame over the size limit is read and discarded in chunks, never held
//! in memory. Its sender still deserves an answer: an editor whose request
//! is dropped silently waits forever, and a response of the editor's that is
//! dropped silently leaves one of our requests hanging until it times out.
//! So while the body streams past, [`Sniffer`] watches for the top-level
//! `"id"` and `"method"` keys of the object, with a few hundred bytes of
//! state at most, and the caller answers with the right id (or fails the
//! right pending request).
//!
//! It is a best-effort scanner, not a validator: on input that is not a JSON
//! object it gives up quietly and reports nothing. It never panics and never
//! allocates more than [`MAX_ID_BYTES`] plus a few bytes of key.

use ccbridge_protocol::jsonrpc::RequestId;

/// Longest raw id (quotes and escapes included) worth decoding.
pub const MAX_ID_BYTES: usize = 512;
/// Longest key that can be one we look for (`"method"`).
const MAX_KEY_BYTES: usize = 8;

/// The findings, valid once the whole body was fed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sniffed {
    /// The top-level `id`, when it is an integer or a string.
    pub id: Option<RequestId>,
    /// Whether the object has a top-level `method` key (a request or a
    /// notification, as opposed to a response).
    pub has_method: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the opening `{`.
    Start,
    /// Inside the top-level object, expecting a key (or `}`).
    Key,
    /// After a key, expecting `:`.
    Colon,
    /// Inside a value at depth >= 1 (or before it starts).
    Value,
    /// Finished or gave up.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Id,
    Method,
    /// `result` or `error`: the message is an answer.
    Answer,
    Other,
}

/// Incremental scanner; feed it the body in chunks of any size.
#[derive(Debug)]
pub struct Sniffer {
    phase: Phase,
    /// Nesting depth of objects and arrays; 1 inside the top-level object.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Capturing the current top-level key.
    key_active: bool,
    key: Vec<u8>,
    key_overflow: bool,
    current: KeyKind,
    /// The current top-level value has started (non-whitespace seen).
    value_started: bool,
    /// Capturing the raw text of the top-level `id` value.
    id_active: bool,
    id_raw: Vec<u8>,
    /// The top-level `id` value has been read (usable or not).
    id_seen: bool,
    /// A top-level `result` or `error` key has been seen.
    answer_seen: bool,
    found: Sniffed,
}

impl Default for Sniffer {
    fn default() -> Self {
        Self::new()
    }
}

impl Sniffer {
    pub fn new() -> Self {
        Sniffer {
            phase: Phase::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            key_active: false,
            key: Vec::new(),
            key_overflow: false,
            current: KeyKind::Other,
            value_started: false,
            id_active: false,
            id_raw: Vec::new(),
            id_seen: false,
            answer_seen: false,
            found: Sniffed::default(),
        }
    }

    /// Whether more input can no longer change what matters: the message
    /// is known to be a request (`id` and `method` seen) or an answer (`id`
    /// and `result`/`error` seen), or the scan is over. A caller skipping
    /// an oversized body can answer as soon as this holds.
    pub fn decided(&self) -> bool {
        self.phase == Phase::Done || (self.id_seen && (self.found.has_method || self.answer_seen))
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        let mut i = 0;
        // Nothing after the decision may change it: the frame reader stops
        // feeding there, so a longer feed must give the same answer.
        while i < chunk.len() && !self.decided() {
            // Fast path: skip the inside of strings we do not capture.
            if self.in_string && !self.escaped && !self.key_active && !self.id_active {
                match chunk[i..].iter().position(|&b| b == b'"' || b == b'\\') {
                    Some(n) => i += n,
                    None => return,
                }
            }
            self.byte(chunk[i]);
            i += 1;
        }
    }

    /// Ends the scan. An `id` whose value was still being read when the
    /// input ended is not reported.
    pub fn finish(self) -> Sniffed {
        self.found
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        if self.id_active {
            // A scalar id (number, or an invalid literal) ends at a delimiter.
            if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                self.finish_id();
            } else {
                self.capture_id(b);
                return;
            }
        }
        let ws = matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        match self.phase {
            Phase::Done => {}
            Phase::Start => {
                if b == b'{' {
                    self.depth = 1;
                    self.phase = Phase::Key;
                } else if !ws {
                    self.phase = Phase::Done;
                }
            }
            Phase::Key => match b {
                b'"' => {
                    self.in_string = true;
                    self.key_active = true;
                    self.key.clear();
                    self.key_overflow = false;
                }
                b'}' => self.phase = Phase::Done,
                _ if ws => {}
                _ => self.phase = Phase::Done,
            },
            Phase::Colon => match b {
                b':' => {
                    self.phase = Phase::Value;
                    self.value_started = false;
                    match self.current {
                        KeyKind::Method => self.found.has_method = true,
                        KeyKind::Answer => self.answer_seen = true,
                        KeyKind::Id | KeyKind::Other => {}
                    }
                }
                _ if ws => {}
                _ => self.phase = Phase::Done,
            },
            Phase::Value => {
                if self.depth == 1 && !self.value_started {
                    if ws {
                        return;
                    }
                    self.value_started = true;
                    if self.current == KeyKind::Id && !matches!(b, b'{' | b'[' | b',' | b'}') {
                        self.id_active = true;
                        self.id_raw.clear();
                        self.capture_id(b);
                        if b == b'"' {
                            self.in_string = true;
                        }
                        return;
                    }
                }
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth = self.depth.saturating_add(1),
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            self.phase = Phase::Done;
                        }
                    }
                    b',' if self.depth == 1 => self.phase = Phase::Key,
                    _ => {}
                }
            }
        }
    }

    fn string_byte(&mut self, b: u8) {
        let closing = !self.escaped && b == b'"';
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        }
        if self.key_active {
            if closing {
                self.in_string = false;
                self.key_active = false;
                self.current = match (self.key_overflow, self.key.as_slice()) {
                    (false, b"id") => KeyKind::Id,
                    (false, b"method") => KeyKind::Method,
                    (false, b"result" | b"error") => KeyKind::Answer,
                    _ => KeyKind::Other,
                };
                self.phase = Phase::Colon;
            } else if self.key.len() < MAX_KEY_BYTES {
                self.key.push(b);
            } else {
                self.key_overflow = true;
            }
        } else if self.id_active {
            self.capture_id(b);
            if closing {
                self.in_string = false;
                self.finish_id();
            }
        } else if closing {
            self.in_string = false;
        }
    }

    fn capture_id(&mut self, b: u8) {
        // One byte past the limit marks the capture as too long to decode.
        if self.id_raw.len() <= MAX_ID_BYTES {
            self.id_raw.push(b);
        }
    }

    fn finish_id(&mut self) {
        self.id_active = false;
        self.id_seen = true;
        if self.id_raw.len() <= MAX_ID_BYTES {
            self.found.id = serde_json::from_slice::<RequestId>(&self.id_raw).ok();
        }
        self.id_raw.clear();
    }
}

/// Scans a whole body at once.
pub fn sniff(body: &[u8]) -> Sniffed {
    let mut s = Sniffer::new();
    s.feed(body);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytewise(body: &[u8]) -> Sniffed {
        let mut s = Sniffer::new();
        for b in body {
            s.feed(std::slice::from_ref(b));
        }
        s.finish()
    }

    fn both(body: &str) -> Sniffed {
        let whole = sniff(body.as_bytes());
        assert_eq!(
            whole,
            bytewise(body.as_bytes()),
            "chunking changed the result for {body}"
        );
        for split in 0..body.len() {
            let mut s = Sniffer::new();
            s.feed(&body.as_bytes()[..split]);
            s.feed(&body.as_bytes()[split..]);
            assert_eq!(s.finish(), whole, "split at {split} of {body}");
        }
        whole
    }

    /// Regression (fuzz target `lsp_framing`): the frame reader stops
    /// feeding an oversized body once the sniffer has decided, but a feed of
    /// a whole buffer went on, and in broken JSON a later `"id"` replaced
    /// the first: the id reported for a too-large frame depended on how the
    /// editor's bytes arrived.
    #[test]
    fn nothing_after_the_decision_changes_the_result() {
        let body = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":roject"],"capabilities":{"diff":true,"openFile":true}}}"#,
            "Content-Length: 166\r\n\r\n",
            r#"{"jsonrpc":"."#,
            "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t",
            r#":":"2.0Z,"id":7,"method":"shutdown"}"#,
        );
        let s = both(body);
        assert_eq!(s.id, Some(RequestId::Number(1)));
        assert!(s.has_method);
    }

    #[test]
    fn finds_ids_and_methods_wherever_they_are() {
        let s = both(r#"{"jsonrpc":"2.0","id":7,"method":"status"}"#);
        assert_eq!(s.id, Some(RequestId::Number(7)));
        assert!(s.has_method);

        let s = both(r#"{"jsonrpc":"2.0","result":{"id":99,"method":"x"},"id":"a\"b"}"#);
        assert_eq!(s.id, Some(RequestId::String("a\"b".into())));
        assert!(!s.has_method, "nested keys are not top-level keys");

        let s = both(r#" { "method" : "diffResolved" , "params" : { "id" : 3 } } "#);
        assert_eq!(s.id, None);
        assert!(s.has_method);

        let s = both(r#"{"id" : -12 , "error":{"code":1,"message":"}"}}"#);
        assert_eq!(s.id, Some(RequestId::Number(-12)));
    }

    #[test]
    fn strings_with_braces_and_escapes_do_not_confuse_it() {
        let s = both(r#"{"params":{"text":"}\\\"{,\"id\":1"},"id":2}"#);
        assert_eq!(s.id, Some(RequestId::Number(2)));
        let s = both(r#"{"a":["id",{"id":5}],"b":"\\","id":"x"}"#);
        assert_eq!(s.id, Some(RequestId::String("x".into())));
    }

    #[test]
    fn unusable_ids_are_not_reported() {
        for body in [
            r#"{"id":null,"method":"m"}"#,
            r#"{"id":1.5}"#,
            r#"{"id":{"n":1}}"#,
            r#"{"id":[1]}"#,
            r#"{"id":true}"#,
            r#"{"id":"unterminated"#,
            r#"{"id":12"#,
        ] {
            assert_eq!(both(body).id, None, "{body}");
        }
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID_BYTES));
        assert_eq!(sniff(long.as_bytes()).id, None);
    }

    #[test]
    fn non_objects_and_garbage_give_nothing_and_never_panic() {
        for body in [
            "",
            "[]",
            "42",
            "\"id\"",
            "{",
            "}",
            "{]",
            "{\"id\"",
            "{\"id\":",
            "{,}",
            "\u{0}{",
            "{\"id\"x1}",
            "{\"a\":1 \"id\":2}",
        ] {
            let s = both(body);
            assert_eq!(s.id, None, "{body:?}");
        }
        let weird: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let _ = bytewise(&weird);
        let _ = sniff(&weird);
    }

    #[test]
    fn agrees_with_serde_on_valid_messages() {
        for body in [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            r#"{"method":"m","jsonrpc":"2.0","params":[1,2,{"x":"y"}],"id":"req-1"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":null}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-1,"message":"m"},"id":3}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":{"id":1}}"#,
        ] {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            let want_id = v
                .get("id")
                .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
            let s = both(body);
            assert_eq!(s.id, want_id, "{body}");
            assert_eq!(s.has_method, v.get("method").is_some(), "{body}");
        }
    }
}
