//! The WebSocket echo server `scripts/autobahn` points the Autobahn
//! fuzzing-client cases at.
//!
//! It runs the engine's own socket layer (`ccbridge_server::socket`): the
//! production limits from `Config::new`, the same classification of
//! every frame, the same bounded writes and closing handshakes. Only the
//! handler differs: each message is sent back as it came, which is what
//! the Autobahn cases expect of the server they test. The upgrade is
//! tungstenite's, because the suite cannot send the auth header
//! `ccbridge_server::handshake` requires; that handshake has its own fuzz
//! target (`fuzz/fuzz_targets/http_upgrade.rs`) and attack tests.
//!
//! ```text
//! cargo run --release -p ccbridge-server --example autobahn_echo -- 127.0.0.1:0
//! ```
//! prints `listening on <addr>` once bound, and serves until killed.

use ccbridge_server::socket::{self, Incoming};
use ccbridge_server::Config;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// The engine's own patience with a client that stops reading.
const WRITE_LIMIT: Duration = Duration::from_secs(60);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9001".into());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    let max = Config::new("autobahn", Vec::new()).max_message_size;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(echo(stream, max));
    }
}

async fn echo(stream: TcpStream, max: usize) {
    let _ = stream.set_nodelay(true);
    let Ok(mut ws) =
        tokio_tungstenite::accept_async_with_config(stream, Some(socket::config(max))).await
    else {
        return;
    };
    loop {
        let sent = match socket::incoming(ws.next().await) {
            Incoming::Text(t) => socket::write(&mut ws, Message::Text(t), WRITE_LIMIT).await,
            Incoming::Binary(b) => socket::write(&mut ws, Message::Binary(b), WRITE_LIMIT).await,
            Incoming::Control => Ok(()),
            Incoming::Closed => {
                socket::closed_by_peer(&mut ws).await;
                return;
            }
            Incoming::Failed(code, reason) => {
                socket::send_close(&mut ws, code, reason.into()).await;
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
}
