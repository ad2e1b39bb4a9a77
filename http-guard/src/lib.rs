//! The HTTP accept loop that sandboxd and `agentd serve` both serve with.
//!
//! axum's own `serve` keeps a connection for as long as its client does: a client that sends
//! half a request line and waits, or that connects and says nothing, holds a file descriptor
//! for ever, and twenty thousand of them exhaust the daemon. [`serve`] bounds every connection:
//!
//! * **a connection cap** ([`Limits::max_connections`]): at the cap, the connection idle the
//!   longest (nothing in flight, between requests) is closed to make room, as servers do with
//!   keep-alive connections under pressure; when every connection is busy, new ones wait in the
//!   kernel's backlog (not accepted, so they cost no descriptor) until one is done;
//! * **a header deadline** ([`Limits::header_read_timeout`]): a request's head must arrive whole
//!   within it, counted from the connection's start or from the first byte of a later request;
//! * **an idle deadline**: a connection with no request in flight and no byte moving is closed
//!   after [`Limits::idle_timeout`], or after the much shorter
//!   [`Limits::unauthenticated_idle_timeout`] while it has not authenticated;
//! * **the smallest budget for strangers**: a connection counts as unauthenticated until one of
//!   its requests passes the server's key check ([`authenticated`], called by the server's auth
//!   middleware). At most [`Limits::max_unauthenticated`] of them are open at once; when a new
//!   one needs the room, the oldest stranger that is older than [`Limits::eviction_age`] and
//!   has no request in flight is closed for it. Holding connections open therefore gains an
//!   attacker nothing, while a burst of new, honest connections (each sends its request within
//!   milliseconds) waits briefly instead of evicting itself.
//!
//! Only HTTP/1.1 is served (with upgrades, for WebSockets): its framing is what the deadlines
//! above are written for, and every client of ours speaks it.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tower::ServiceExt;

/// How much a connection may hold, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Connections open at once that have not authenticated (a part of `max_connections`).
    pub max_unauthenticated: usize,
    /// How long a request's head may take to arrive whole.
    pub header_read_timeout: Duration,
    /// How long an authenticated connection may sit with nothing in flight and no byte moving.
    pub idle_timeout: Duration,
    /// The same, for a connection that has not authenticated.
    pub unauthenticated_idle_timeout: Duration,
    /// How old an unauthenticated connection must be before a newcomer may evict it.
    pub eviction_age: Duration,
    /// After shutdown is asked for, how long in-flight requests may finish (`None`: as long as
    /// they need).
    pub shutdown_grace: Option<Duration>,
}

impl Default for Limits {
    /// Budgets for a daemon that serves a few agent hosts: 1,024 connections, 64 of them
    /// strangers; 10 s for a request head; 5 minutes idle (longer than the 90 s for which HTTP
    /// clients' pools keep a connection, so a pooled connection is not closed under a client's
    /// feet), 15 s for strangers; strangers evictable after 1 s; 3 s of grace at shutdown.
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            max_unauthenticated: 64,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            unauthenticated_idle_timeout: Duration::from_secs(15),
            eviction_age: Duration::from_secs(1),
            shutdown_grace: Some(Duration::from_secs(3)),
        }
    }
}

/// Marks the connection that carried this request as authenticated: from now on it has the
/// authenticated budget and no longer counts among the strangers. The server's auth middleware
/// calls this when a request's key is right (or when no key is required). A request that did not
/// come through [`serve`] carries no connection, and this does nothing.
pub fn authenticated(extensions: &axum::http::Extensions) {
    if let Some(connection) = extensions.get::<ConnectionHandle>() {
        connection.0.promote();
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves; then stops accepting,
/// lets idle connections close and in-flight requests finish within the grace, and returns.
pub async fn serve<L>(
    mut listener: L,
    app: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
) where
    L: Listener,
{
    let registry = Arc::new(Registry::new(&limits));
    let (stop, stopped) = watch::channel(false);
    let epoch = Instant::now();
    let mut next_id = 0u64;
    let mut shutdown = pin!(shutdown);
    loop {
        let admitted = async {
            let (io, _) = listener.accept().await;
            next_id += 1;
            let shared = Arc::new(Shared::new(next_id, epoch, registry.clone()));
            // Room is made (or waited for) once a connection is really there: at most one
            // accepted connection waits here, the others wait in the kernel's backlog.
            registry.admit(&shared).await;
            (io, shared)
        };
        let (io, shared) = tokio::select! {
            () = &mut shutdown => break,
            admitted = admitted => admitted,
        };
        tokio::spawn(connection(io, app.clone(), shared, limits, stopped.clone()));
    }
    tracing::info!("shutting down");
    let _ = stop.send(true);
    let drained = registry.drained();
    match limits.shutdown_grace {
        Some(grace) => {
            if tokio::time::timeout(grace, drained).await.is_err() {
                tracing::warn!("requests still running after the grace period; stopping anyway");
            }
        }
        None => drained.await,
    }
}

/// What the request extensions carry: the connection the request came on.
#[derive(Debug, Clone)]
struct ConnectionHandle(Arc<Shared>);

/// One connection's state, shared by its watchdog, its I/O and its requests.
#[derive(Debug)]
struct Shared {
    id: u64,
    epoch: Instant,
    authenticated: AtomicBool,
    in_flight: AtomicUsize,
    /// When a byte last moved (milliseconds since `epoch`).
    last_activity: AtomicU64,
    /// When the head of the request being read began (milliseconds since `epoch`, plus one);
    /// 0 while no head is being read.
    head_started: AtomicU64,
    evicted: Notify,
    /// Told when the watchdog's deadline may have moved (a head began, a request ended).
    changed: Notify,
    registry: Arc<Registry>,
}

impl Shared {
    fn new(id: u64, epoch: Instant, registry: Arc<Registry>) -> Shared {
        let now = millis_since(epoch);
        Shared {
            id,
            epoch,
            authenticated: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            last_activity: AtomicU64::new(now),
            // The first request's head is due from the moment the connection opens.
            head_started: AtomicU64::new(now + 1),
            evicted: Notify::new(),
            changed: Notify::new(),
            registry,
        }
    }

    fn promote(&self) {
        if !self.authenticated.swap(true, Ordering::SeqCst) {
            // One stranger fewer.
            self.registry.freed.notify_one();
        }
    }

    fn now(&self) -> u64 {
        millis_since(self.epoch)
    }

    /// Bytes moved; read bytes with no request in flight begin a request's head.
    fn moved(&self, read: bool) {
        let now = self.now();
        self.last_activity.store(now, Ordering::SeqCst);
        if read && self.in_flight.load(Ordering::SeqCst) == 0 {
            let began = self
                .head_started
                .compare_exchange(0, now + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            if began {
                self.changed.notify_one();
            }
        }
    }

    fn instant(&self, millis: u64) -> Instant {
        self.epoch + Duration::from_millis(millis)
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A request in flight on a connection (counted while its response is being made).
struct InFlight(Arc<Shared>);

impl InFlight {
    fn new(shared: Arc<Shared>) -> InFlight {
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        // The head is in: its deadline no longer applies.
        shared.head_started.store(0, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.moved(false);
        self.0.changed.notify_one();
        // Idle now: evictable at the cap.
        self.0.registry.freed.notify_one();
    }
}

/// Serves one connection until it ends, its deadlines pass, it is evicted, or shutdown.
async fn connection<I>(
    io: I,
    app: axum::Router,
    shared: Arc<Shared>,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(Tracked {
        inner: io,
        shared: shared.clone(),
    });
    let for_requests = shared.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let in_flight = InFlight::new(for_requests.clone());
        request
            .extensions_mut()
            .insert(ConnectionHandle(for_requests.clone()));
        let app = app.clone();
        async move {
            let _in_flight = in_flight;
            app.oneshot(request.map(axum::body::Body::new)).await
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(io, service)
        .with_upgrades();
    let mut served = pin!(served);
    loop {
        let deadline = watchdog(&shared, &limits);
        let wake = match deadline {
            Watch::Close(why) => {
                tracing::debug!(connection = shared.id, why, "closing a connection");
                break;
            }
            Watch::At(at) => at,
        };
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(connection = shared.id, error = %e, "connection ended");
                }
                break;
            }
            () = tokio::time::sleep_until(wake) => {}
            () = shared.changed.notified() => {}
            () = shared.evicted.notified() => {
                tracing::debug!(connection = shared.id, "evicted for a newer unauthenticated connection");
                break;
            }
            _ = stopped.changed() => {
                served.as_mut().graceful_shutdown();
                let _ = served.as_mut().await;
                break;
            }
        }
    }
    shared.registry.leave(shared.id);
}

/// What the watchdog decides now: close the connection, or look again at a time.
enum Watch {
    Close(&'static str),
    At(Instant),
}

fn watchdog(shared: &Shared, limits: &Limits) -> Watch {
    let now = shared.now();
    let head = shared.head_started.load(Ordering::SeqCst);
    if head != 0 {
        let due = head - 1 + millis(limits.header_read_timeout);
        return if now >= due {
            Watch::Close("the request head did not arrive in time")
        } else {
            Watch::At(shared.instant(due))
        };
    }
    let idle = if shared.authenticated.load(Ordering::SeqCst) {
        limits.idle_timeout
    } else {
        limits.unauthenticated_idle_timeout
    };
    if shared.in_flight.load(Ordering::SeqCst) > 0 {
        // A request may take long (a command runs for minutes); look again later.
        return Watch::At(shared.instant(now + millis(idle)));
    }
    let due = shared.last_activity.load(Ordering::SeqCst) + millis(idle);
    if now >= due {
        Watch::Close("idle")
    } else {
        Watch::At(shared.instant(due))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

/// The connection's I/O, noting when bytes move.
struct Tracked<I> {
    inner: I,
    shared: Arc<Shared>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Tracked<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.shared.moved(true);
        }
        result
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Tracked<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.shared.moved(false);
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.shared.moved(false);
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Every open connection, oldest first; keeps both caps.
#[derive(Debug)]
struct Registry {
    max_connections: usize,
    max_unauthenticated: usize,
    eviction_age: Duration,
    places: Mutex<Vec<Place>>,
    /// Told whenever room may have appeared: a connection closed, authenticated or went idle.
    freed: Notify,
}

#[derive(Debug)]
struct Place {
    id: u64,
    opened: Instant,
    connection: Weak<Shared>,
}

impl Place {
    /// Whether it counts against the strangers' cap.
    fn stranger(&self) -> bool {
        self.connection
            .upgrade()
            .is_some_and(|c| !c.authenticated.load(Ordering::SeqCst))
    }

    /// Whether it may be closed to make room now, and how long ago a byte last moved on it
    /// (the longest idle goes first). A stranger may be once it is `eviction_age` old and has
    /// nothing in flight; with `idle_ok`, so may an authenticated connection between requests.
    fn evictable(&self, now: Instant, eviction_age: Duration, idle_ok: bool) -> Option<u64> {
        let opened = self.opened;
        let Some(connection) = self.connection.upgrade() else {
            return Some(0);
        };
        if connection.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let last = connection.last_activity.load(Ordering::SeqCst);
        if !connection.authenticated.load(Ordering::SeqCst) {
            return (now.duration_since(opened) >= eviction_age).then_some(last);
        }
        (idle_ok && connection.head_started.load(Ordering::SeqCst) == 0).then_some(last)
    }
}

impl Registry {
    fn new(limits: &Limits) -> Registry {
        let max_connections = limits.max_connections.max(1);
        Registry {
            max_connections,
            max_unauthenticated: limits.max_unauthenticated.clamp(1, max_connections),
            eviction_age: limits.eviction_age,
            places: Mutex::new(Vec::new()),
            freed: Notify::new(),
        }
    }

    fn places(&self) -> std::sync::MutexGuard<'_, Vec<Place>> {
        self.places.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `connection` in: at once if both caps leave room, else by evicting, else once room
    /// appears.
    async fn admit(&self, connection: &Arc<Shared>) {
        loop {
            let freed = self.freed.notified();
            let retry_at = {
                let mut places = self.places();
                if self.make_room(&mut places) {
                    places.push(Place {
                        id: connection.id,
                        opened: Instant::now(),
                        connection: Arc::downgrade(connection),
                    });
                    return;
                }
                // The earliest a stranger becomes old enough to evict.
                places
                    .iter()
                    .filter(|p| p.stranger())
                    .map(|p| p.opened + self.eviction_age)
                    .min()
            };
            match retry_at {
                Some(at) => {
                    tokio::select! {
                        () = freed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => freed.await,
            }
        }
    }

    /// Evicts what must go for one more connection to fit both caps; whether it fits.
    fn make_room(&self, places: &mut Vec<Place>) -> bool {
        let now = Instant::now();
        if places.len() >= self.max_connections
            && !self.evict(places, |p| p.evictable(now, self.eviction_age, true))
        {
            return false;
        }
        places.iter().filter(|p| p.stranger()).count() < self.max_unauthenticated
            || self.evict(places, |p| {
                p.stranger()
                    .then(|| p.evictable(now, self.eviction_age, false))
                    .flatten()
            })
    }

    /// Closes the place `candidate` ranks first (the longest idle); whether there was one.
    fn evict(&self, places: &mut Vec<Place>, candidate: impl Fn(&Place) -> Option<u64>) -> bool {
        let victim = places
            .iter()
            .enumerate()
            .filter_map(|(i, p)| candidate(p).map(|last| (last, i)))
            .min()
            .map(|(_, i)| places.remove(i));
        let Some(victim) = victim else {
            return false;
        };
        if let Some(connection) = victim.connection.upgrade() {
            connection.evicted.notify_one();
        }
        true
    }

    /// Gives back a connection's place (it closed); nothing if it has none (evicted).
    fn leave(&self, id: u64) {
        let mut places = self.places();
        if let Some(i) = places.iter().position(|p| p.id == id) {
            places.remove(i);
            drop(places);
            self.freed.notify_one();
        }
    }

    /// Resolves once no connection is open.
    async fn drained(&self) {
        loop {
            let freed = self.freed.notified();
            if self.places().is_empty() {
                return;
            }
            freed.await;
        }
    }
}

#[cfg(test)]
mod tests;
