//! The five benchmarks. Each measures ccbridge and the floor in the same run,
//! alternating between them (run by run, or round by round) so that drift in
//! the machine's load hits both alike, and returns raw samples.
//!
//! 1–3 run in-process on the caller's runtime (both servers and the client
//! share it); 4–5 spawn the servers as processes.

use crate::client::Client;
use crate::fixture;
use crate::floor::Floor;
use crate::inproc::{Engine, Tuning};
use crate::process::{ServerCommand, ServerProcess};
use anyhow::{ensure, Context};
use ccbridge_server::EditorEvent;
use std::time::{Duration, Instant};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Utf8Bytes;

/// Which server a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ccbridge,
    Floor,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Ccbridge => "ccbridge",
            Side::Floor => "floor",
        }
    }
}

/// `[first, second]` for run `i`: the order flips every run.
fn order(i: usize) -> [Side; 2] {
    if i.is_multiple_of(2) {
        [Side::Ccbridge, Side::Floor]
    } else {
        [Side::Floor, Side::Ccbridge]
    }
}

/// Samples per server.
#[derive(Debug, Default, Clone)]
pub struct Pair<T> {
    pub ccbridge: T,
    pub floor: T,
}

impl<T> Pair<T> {
    pub fn get_mut(&mut self, s: Side) -> &mut T {
        match s {
            Side::Ccbridge => &mut self.ccbridge,
            Side::Floor => &mut self.floor,
        }
    }
    pub fn get(&self, s: Side) -> &T {
        match s {
            Side::Ccbridge => &self.ccbridge,
            Side::Floor => &self.floor,
        }
    }
}

/// Where a client connects.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub port: u16,
    pub token: String,
}

/// An in-process floor, running on the current runtime.
pub struct FloorHandle {
    pub endpoint: Endpoint,
    pub notify: broadcast::Sender<Utf8Bytes>,
    task: tokio::task::JoinHandle<()>,
}

impl FloorHandle {
    pub async fn start() -> anyhow::Result<FloorHandle> {
        let floor = Floor::bind(&crate::floor::random_token()?).await?;
        let endpoint = Endpoint {
            port: floor.port(),
            token: floor.token().to_owned(),
        };
        let notify = floor.notify();
        let task = tokio::spawn(floor.run());
        Ok(FloorHandle {
            endpoint,
            notify,
            task,
        })
    }
}

impl Drop for FloorHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn engine_endpoint(e: &Engine) -> Endpoint {
    Endpoint {
        port: e.port,
        token: e.token.clone(),
    }
}

// ------------------------------------------------------------- 1. connect

/// Connect + `initialize` + `notifications/initialized` + `tools/list`,
/// `runs` times per server, sequentially, alternating the server every run.
/// The clock stops when the `tools/list` response has arrived; the close
/// that follows is not timed.
pub async fn connect(runs: usize) -> anyhow::Result<Pair<Vec<Duration>>> {
    let engine = Engine::start(Tuning::default()).await?;
    let floor = FloorHandle::start().await?;
    let ends = Pair {
        ccbridge: engine_endpoint(&engine),
        floor: floor.endpoint.clone(),
    };
    let mut out = Pair::<Vec<Duration>>::default();
    let warmup = (runs / 10).max(2);
    for i in 0..warmup + runs {
        for side in order(i) {
            let e = ends.get(side);
            let t0 = Instant::now();
            let c = Client::session(e.port, &e.token).await?;
            let dt = t0.elapsed();
            c.close().await;
            if i >= warmup {
                out.get_mut(side).push(dt);
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------- 2. round trip

/// What [`round_trip`] measured.
#[derive(Debug, Clone)]
pub struct RoundTrip {
    pub samples: Pair<Vec<Duration>>,
    /// Completed calls per second of wall time, all connections together.
    pub throughput: Pair<f64>,
    /// Size of one `getDiagnostics` response frame, bytes.
    pub response_bytes: Pair<usize>,
}

/// Feeds ccbridge the fixture's 1,000 diagnostics as editor events.
async fn feed_diagnostics(engine: &Engine) -> anyhow::Result<()> {
    for i in 0..fixture::FILES {
        engine
            .handle
            .send(EditorEvent::Diagnostics {
                path: fixture::file_path(i),
                diagnostics: fixture::diagnostics_for(i),
            })
            .await?;
    }
    Ok(())
}

/// Checks one full answer (id, 1,000 diagnostics) and returns its size.
/// Retries briefly: the engine applies editor events asynchronously.
async fn validate_diagnostics(c: &mut Client) -> anyhow::Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let id = c.id();
        let r = c.request(fixture::get_diagnostics_request(id)).await?;
        ensure!(
            fixture::response_id(r.as_str()) == Some(id),
            "answer to another request: {}",
            fixture::truncate(r.as_str())
        );
        let n = fixture::count_diagnostics(r.as_str())?;
        if n == fixture::FILES * fixture::PER_FILE {
            return Ok(r.len());
        }
        ensure!(Instant::now() < deadline, "only {n} diagnostics after 5 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `calls` sequential `getDiagnostics` calls on `c`, each timed from send
/// to the whole response frame having arrived.
async fn call_loop(mut c: Client, calls: usize) -> anyhow::Result<(Client, Vec<Duration>)> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let id = c.id();
        let req = fixture::get_diagnostics_request(id);
        let t0 = Instant::now();
        let r = c.request(req).await?;
        samples.push(t0.elapsed());
        ensure!(
            r.len() > 1000,
            "short answer: {}",
            fixture::truncate(r.as_str())
        );
    }
    Ok((c, samples))
}

/// Runs `calls` calls on each client concurrently; returns the clients,
/// the samples and the wall time.
async fn concurrent(
    clients: Vec<Client>,
    calls: usize,
) -> anyhow::Result<(Vec<Client>, Vec<Duration>, Duration)> {
    let t0 = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| tokio::spawn(call_loop(c, calls)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    let mut samples = Vec::new();
    for t in tasks {
        let (c, s) = t.await.context("a client task panicked")??;
        back.push(c);
        samples.extend(s);
    }
    Ok((back, samples, t0.elapsed()))
}

/// `tools/call getDiagnostics {}` against 1,000 cached diagnostics on
/// `conns` connections per server, each doing `calls_per_conn` sequential
/// calls, split into `rounds` rounds that alternate the server order.
pub async fn round_trip(
    conns: usize,
    calls_per_conn: usize,
    rounds: usize,
) -> anyhow::Result<RoundTrip> {
    let engine = Engine::start(Tuning::default()).await?;
    feed_diagnostics(&engine).await?;
    let floor = FloorHandle::start().await?;
    let ends = Pair {
        ccbridge: engine_endpoint(&engine),
        floor: floor.endpoint.clone(),
    };
    let mut clients = Pair::<Vec<Client>>::default();
    let mut response_bytes = Pair::<usize>::default();
    for side in [Side::Ccbridge, Side::Floor] {
        let e = ends.get(side);
        for _ in 0..conns {
            clients
                .get_mut(side)
                .push(Client::session(e.port, &e.token).await?);
        }
        *response_bytes.get_mut(side) = validate_diagnostics(&mut clients.get_mut(side)[0]).await?;
    }
    // Warm-up, not recorded.
    for side in [Side::Ccbridge, Side::Floor] {
        let cs = std::mem::take(clients.get_mut(side));
        let (cs, _, _) = concurrent(cs, 20).await?;
        *clients.get_mut(side) = cs;
    }
    let per_round = calls_per_conn.div_ceil(rounds.max(1));
    let mut samples = Pair::<Vec<Duration>>::default();
    let mut wall = Pair::<Duration>::default();
    for r in 0..rounds.max(1) {
        for side in order(r) {
            let cs = std::mem::take(clients.get_mut(side));
            let (cs, s, w) = concurrent(cs, per_round).await?;
            *clients.get_mut(side) = cs;
            samples.get_mut(side).extend(s);
            *wall.get_mut(side) += w;
        }
    }
    for side in [Side::Ccbridge, Side::Floor] {
        for c in std::mem::take(clients.get_mut(side)) {
            c.close().await;
        }
    }
    let throughput = Pair {
        ccbridge: samples.ccbridge.len() as f64 / wall.ccbridge.as_secs_f64(),
        floor: samples.floor.len() as f64 / wall.floor.as_secs_f64(),
    };
    Ok(RoundTrip {
        samples,
        throughput,
        response_bytes,
    })
}

// ----------------------------------------------------------- 3. selection

/// Editor event → the client's WebSocket has the `selection_changed`.
///
/// ccbridge runs with `selection_debounce = 0` and a 5 ms `notify_delay`;
/// the client counts as ready once it has received the replay of the
/// selection sent before it connected. Then, `events` times per server in
/// `rounds` alternating rounds: build a distinct selection, start the clock,
/// `EngineHandle::send(EditorEvent::Selection(..))`, stop it when the client
/// reads the notification. The floor is told through its channel to push
/// the same notification, serialized before the clock starts.
pub async fn selection(events: usize, rounds: usize) -> anyhow::Result<Pair<Vec<Duration>>> {
    let engine = Engine::start(Tuning {
        selection_debounce: Duration::ZERO,
        notify_delay: Duration::from_millis(5),
    })
    .await?;
    let floor = FloorHandle::start().await?;
    let mut n: u64 = 0;
    engine
        .handle
        .send(EditorEvent::Selection(Some(fixture::selection(n))))
        .await?;
    let mut ours = Client::session(engine.port, &engine.token).await?;
    // Ready: the replayed selection has arrived.
    loop {
        let t = ours.next_text().await?;
        if fixture::selection_number(t.as_str()) == Some(n) {
            break;
        }
    }
    let mut theirs = Client::session(floor.endpoint.port, &floor.endpoint.token).await?;

    let mut out = Pair::<Vec<Duration>>::default();
    let warmup = (events / 20).max(5);
    let per_round = events.div_ceil(rounds.max(1));
    for _ in 0..warmup {
        for side in [Side::Ccbridge, Side::Floor] {
            n += 1;
            one_selection(side, n, &engine, &floor, &mut ours, &mut theirs).await?;
        }
    }
    for r in 0..rounds.max(1) {
        for side in order(r) {
            for _ in 0..per_round {
                n += 1;
                let dt = one_selection(side, n, &engine, &floor, &mut ours, &mut theirs).await?;
                out.get_mut(side).push(dt);
            }
        }
    }
    ours.close().await;
    theirs.close().await;
    Ok(out)
}

/// One timed selection event on `side`.
async fn one_selection(
    side: Side,
    n: u64,
    engine: &Engine,
    floor: &FloorHandle,
    ours: &mut Client,
    theirs: &mut Client,
) -> anyhow::Result<Duration> {
    let sel = fixture::selection(n);
    match side {
        Side::Ccbridge => {
            let t0 = Instant::now();
            engine
                .handle
                .send(EditorEvent::Selection(Some(sel)))
                .await?;
            wait_for(ours, n, t0).await
        }
        Side::Floor => {
            let text = Utf8Bytes::from(fixture::selection_notification(&sel));
            let t0 = Instant::now();
            floor
                .notify
                .send(text)
                .map_err(|_| anyhow::anyhow!("the floor has no connection"))?;
            wait_for(theirs, n, t0).await
        }
    }
}

/// Reads until selection `n` arrives; the time from `t0` to its arrival.
async fn wait_for(c: &mut Client, n: u64, t0: Instant) -> anyhow::Result<Duration> {
    loop {
        let t = c.next_text().await?;
        let dt = t0.elapsed();
        match fixture::selection_number(t.as_str()) {
            Some(m) if m == n => return Ok(dt),
            Some(m) if m < n => continue,
            _ => anyhow::bail!(
                "expected selection {n}, got {}",
                fixture::truncate(t.as_str())
            ),
        }
    }
}

// ----------------------------------------------------------------- 4. RSS

/// Resident memory (KiB) of a server process.
#[derive(Debug, Clone, Default)]
pub struct Rss {
    pub idle_kib: Vec<u64>,
    pub clients_kib: Vec<u64>,
    /// `RssAnon` idle: the process's private memory, without the pages of
    /// its binary and libraries (shared with the page cache).
    pub idle_anon_kib: Vec<u64>,
}

/// `repeats` times per server (alternating): spawn, wait for the lock file,
/// let it settle 300 ms, read `VmRSS` and `RssAnon` (idle); open `clients` sessions
/// (`initialize` + `tools/list`), let it settle 900 ms (past ccbridge's
/// 600 ms context-replay delay), read `VmRSS` again; close everything.
pub async fn rss(
    cmds: &Pair<ServerCommand>,
    clients: usize,
    repeats: usize,
) -> anyhow::Result<Pair<Rss>> {
    let mut out = Pair::<Rss>::default();
    for i in 0..repeats {
        for side in order(i) {
            let mut p = ServerProcess::spawn(cmds.get(side))?;
            let (port, token) = tokio::task::block_in_place(|| p.endpoint())?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let idle = p.rss_kib()?;
            let idle_anon = p.rss_anon_kib()?;
            let mut cs = Vec::with_capacity(clients);
            for _ in 0..clients {
                cs.push(Client::session(port, &token).await?);
            }
            tokio::time::sleep(Duration::from_millis(900)).await;
            let busy = p.rss_kib()?;
            for c in cs {
                c.close().await;
            }
            tokio::task::block_in_place(|| p.stop())?;
            let r = out.get_mut(side);
            r.idle_kib.push(idle);
            r.idle_anon_kib.push(idle_anon);
            r.clients_kib.push(busy);
        }
    }
    Ok(out)
}

// ------------------------------------------------------------- 5. start-up

/// Spawn until `$CLAUDE_CONFIG_DIR/ide/*.lock` exists, polled every 100 µs,
/// `runs` times per server, alternating; 3 untimed warm-up runs each. Each
/// process is then stopped by closing its stdin (not timed). Blocking.
pub fn startup(cmds: &Pair<ServerCommand>, runs: usize) -> anyhow::Result<Pair<Vec<Duration>>> {
    let mut out = Pair::<Vec<Duration>>::default();
    let warmup = 3;
    for i in 0..warmup + runs {
        for side in order(i) {
            let mut p = ServerProcess::spawn(cmds.get(side))?;
            p.wait_for_lock(Duration::from_micros(100), Duration::from_secs(5))?;
            let dt = p.spawned_at.elapsed();
            p.stop()?;
            if i >= warmup {
                out.get_mut(side).push(dt);
            }
        }
    }
    Ok(out)
}
