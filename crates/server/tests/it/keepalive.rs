//! Keepalive under paused time, over in-memory WebSocket pairs served with
//! `EngineHandle::serve_websocket`: a silent client is dropped after two
//! intervals, an answering one stays, and a machine that slept (every timer
//! overdue at once) does not count as client silence.

use crate::support::*;
use ccbridge_server::{EngineHandle, Server};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncReadExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const INTERVAL: Duration = Duration::from_secs(30);

async fn engine() -> EngineHandle {
    let config = test_config(None);
    assert_eq!(config.keepalive_interval, INTERVAL, "the default interval");
    let server = Server::bind(config, FakeFrontend::new())
        .await
        .expect("bind");
    // `run` is not needed: serve_websocket serves a connection by itself.
    server.handle()
}

/// Serves the server end of a fresh in-memory pair; returns the client's
/// raw end and the serving task (which yields the instant it ended).
async fn serve_pair(handle: &EngineHandle) -> (DuplexStream, JoinHandle<Instant>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let ws =
        WebSocketStream::from_raw_socket(server_io, Role::Server, Some(handle.websocket_config()))
            .await;
    let h = handle.clone();
    let served = tokio::spawn(async move {
        h.serve_websocket(ws).await;
        Instant::now()
    });
    (client_io, served)
}

/// A client that reads all the time (so tungstenite answers every ping at
/// once) and forwards text frames and the pings it saw.
struct ReadingClient {
    sink: futures_util::stream::SplitSink<WebSocketStream<DuplexStream>, Message>,
    texts: mpsc::UnboundedReceiver<String>,
    pings: mpsc::UnboundedReceiver<()>,
    reader: JoinHandle<Option<u16>>,
}

async fn reading_client(io: DuplexStream) -> ReadingClient {
    let ws = WebSocketStream::from_raw_socket(io, Role::Client, None).await;
    let (sink, mut stream) = ws.split();
    let (tx, texts) = mpsc::unbounded_channel();
    let (ping_tx, pings) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        while let Some(m) = stream.next().await {
            match m {
                Ok(Message::Text(t)) => {
                    let _ = tx.send(t.to_string());
                }
                Ok(Message::Ping(_)) => {
                    let _ = ping_tx.send(());
                }
                Ok(Message::Close(f)) => return f.map(|f| u16::from(f.code)),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    });
    ReadingClient {
        sink,
        texts,
        pings,
        reader,
    }
}

impl ReadingClient {
    /// The connection still works end to end: a ping request is answered.
    async fn ping(&mut self, id: u32) {
        let req = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        self.sink.send(Message::text(req)).await.expect("send");
        let answer = bounded("the ping answer", WAIT, self.texts.recv())
            .await
            .expect("reader alive");
        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["id"], id);
        assert_eq!(v["result"], serde_json::json!({}));
    }
}

#[tokio::test(start_paused = true)]
async fn a_silent_client_is_closed_after_two_intervals() {
    let handle = engine().await;
    let (mut client_io, served) = serve_pair(&handle).await;
    let t0 = Instant::now();
    // The client reads nothing, so it never answers a ping.
    let ended = bounded(
        "the silent client to be dropped",
        Duration::from_secs(600),
        served,
    )
    .await
    .expect("serve task");
    let after = ended - t0;
    assert!(
        after >= INTERVAL * 2 && after < INTERVAL * 2 + Duration::from_secs(2),
        "dropped after {after:?}"
    );
    // What it was sent meanwhile: one ping, then a close with 1001.
    let mut bytes = Vec::new();
    bounded(
        "EOF on the client end",
        WAIT,
        client_io.read_to_end(&mut bytes),
    )
    .await
    .expect("read");
    let frames = parse_server_frames(&bytes);
    let opcodes: Vec<u8> = frames.iter().map(|f| f.0).collect();
    assert_eq!(opcodes, vec![0x9, 0x8], "{frames:?}");
    assert_eq!(
        close_payload(&frames[1].1),
        (1001, "keepalive timeout".into())
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_that_answers_pings_stays_for_ten_minutes() {
    let handle = engine().await;
    let (io, served) = serve_pair(&handle).await;
    let mut c = reading_client(io).await;
    c.ping(1).await;
    // Ten minutes of paused time: twenty ping intervals.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!served.is_finished(), "an answering client was dropped");
    assert!(!c.reader.is_finished());
    c.ping(2).await;
}

#[tokio::test(start_paused = true)]
async fn waking_from_sleep_does_not_drop_a_client_that_answers_afterwards() {
    let handle = engine().await;
    let (io, served) = serve_pair(&handle).await;
    let mut c = reading_client(io).await;
    c.ping(1).await;
    tokio::time::sleep(INTERVAL + Duration::from_secs(5)).await;
    while c.pings.try_recv().is_ok() {}
    // The laptop sleeps for an hour: every timer is overdue at once and the
    // client has been "silent" for an hour when the engine looks. The
    // engine's first look must be a ping, which the client answers, not
    // a close.
    tokio::time::advance(Duration::from_secs(3600)).await;
    bounded("the ping after the wake-up", WAIT, c.pings.recv())
        .await
        .expect("the client was dropped on waking up");
    c.ping(2).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(
        !served.is_finished(),
        "the client was dropped after the wake-up"
    );
    assert!(!c.reader.is_finished());
    c.ping(3).await;

    // Once it stops answering, it is dropped after two intervals after all.
    c.reader.abort();
    let t0 = Instant::now();
    let ended = bounded(
        "the now-silent client to be dropped",
        Duration::from_secs(600),
        served,
    )
    .await
    .expect("serve task");
    assert!(
        ended - t0 <= INTERVAL * 2 + Duration::from_secs(2),
        "{:?}",
        ended - t0
    );
}
