//! The egress filtering proxy (`sandboxd --egress-proxy`): decides a sandbox's TCP
//! connections by the name they are for, where its egress policy names domains.
//!
//! agentd runs one per Docker engine, in a container on the host's network namespace, and the
//! host's firewall redirects (`nat` `REDIRECT`) the connections of such a sandbox to it. For
//! each connection the proxy:
//!
//! 1. takes the destination the sandbox asked for from the redirect (`SO_ORIGINAL_DST`) and
//!    refuses connections that were not redirected (someone dialling the proxy directly);
//! 2. finds the sandbox's policy by the connection's source address ([`policy`]);
//! 3. reads the first bytes, for at most [`SNIFF_DEADLINE`]: a TLS ClientHello gives the
//!    server name (SNI), an HTTP/1 request its `Host` ([`sniff`]); anything else is closed;
//! 4. allows the name if a domain rule matches it on the original destination port; a denied
//!    HTTP request is answered `403` with a text that says so
//!    ([`denied_message`]), a denied TLS connection gets an `access_denied` alert;
//! 5. connects to the name itself — its pin, or its DNS answer here — on the original port,
//!    never to the address the sandbox dialled, so an allowed name cannot be used to reach an
//!    arbitrary address; and never to this host, the link-local range or another sandbox
//!    ([`policy::Forbidden`]);
//! 6. sends what it read and splices the bytes both ways.
//!
//! Connections are bounded per sandbox ([`EgressProxyCli::max_per_sandbox`]) and in all.

mod policy;
mod sniff;

use std::collections::HashMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use policy::{Block, Forbidden, Policy};
use sniff::{MAX_SNIFF_BYTES, Sniffed, sniff};

/// The first argument that selects this mode.
pub use sandbox_common::modes::EGRESS_PROXY as EGRESS_PROXY_FLAG;

/// How long a connection may take to say where it goes.
pub(crate) const SNIFF_DEADLINE: Duration = Duration::from_secs(5);
/// How long connecting to an allowed destination may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections at once, over all sandboxes.
const MAX_CONNECTIONS: usize = 4096;

/// The arguments of `sandboxd --egress-proxy`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "sandboxd --egress-proxy",
    about = "The egress filtering proxy of Docker sandboxes whose policy names domains"
)]
pub struct EgressProxyCli {
    /// The directory of policy files (`*.json`, one per sandbox network).
    #[arg(long)]
    pub policies: PathBuf,
    /// The address to listen on (the firewall redirects sandboxes' connections to its port).
    #[arg(long)]
    pub listen: SocketAddr,
    /// An IPv4 block never connected to (every sandbox network); repeatable.
    #[arg(long = "deny", value_name = "CIDR")]
    pub deny: Vec<String>,
    /// Connections at once per sandbox.
    #[arg(long, default_value_t = 256)]
    pub max_per_sandbox: usize,
}

/// Why the proxy stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum EgressProxyError {
    /// A bad argument (no retry helps).
    #[error("{0}")]
    Config(String),
    /// The port could not be bound (in use: another proxy may be running).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The text a denied connection is told: one home for the words agents (and tests) read.
pub(crate) fn denied_message(host: &str, port: u16) -> String {
    format!("egress to {host}:{port} is not allowed by this sandbox's policy")
}

struct Proxy {
    policies: PathBuf,
    deny: Vec<Block>,
    max_per_sandbox: usize,
    /// Open connections per sandbox network (by its first address).
    open: Mutex<HashMap<u32, usize>>,
}

/// One admitted connection of a sandbox; gives its place back when dropped.
struct Admitted<'a> {
    proxy: &'a Proxy,
    key: u32,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        if let Ok(mut open) = self.proxy.open.lock()
            && let Some(n) = open.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl Proxy {
    fn admit(&self, subnet: &Block) -> Option<Admitted<'_>> {
        let key = subnet.first();
        let mut open = self.open.lock().ok()?;
        let n = open.entry(key).or_default();
        if *n >= self.max_per_sandbox {
            return None;
        }
        *n += 1;
        Some(Admitted { proxy: self, key })
    }
}

/// Serves until `shutdown` resolves; `on_listening` gets the bound address.
pub async fn run_egress_proxy(
    cli: EgressProxyCli,
    shutdown: impl Future<Output = ()>,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), EgressProxyError> {
    let deny = cli
        .deny
        .iter()
        .map(|d| {
            Block::parse(d).ok_or_else(|| EgressProxyError::Config(format!("bad --deny {d:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let listener =
        TcpListener::bind(cli.listen)
            .await
            .map_err(|source| EgressProxyError::Bind {
                addr: cli.listen,
                source,
            })?;
    let addr = listener
        .local_addr()
        .map_err(|source| EgressProxyError::Bind {
            addr: cli.listen,
            source,
        })?;
    on_listening(addr);
    let proxy = Arc::new(Proxy {
        policies: cli.policies,
        deny,
        max_per_sandbox: cli.max_per_sandbox,
        open: Mutex::new(HashMap::new()),
    });
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => return Ok(()),
            permit = slots.clone().acquire_owned() => permit,
        };
        let Ok(permit) = permit else { return Ok(()) };
        let accepted = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, SocketAddr::V4(peer))) => {
                let proxy = proxy.clone();
                tokio::spawn(async move {
                    handle(&proxy, stream, peer).await;
                    drop(permit);
                });
            }
            Ok(_) => {} // IPv6: sandbox networks are IPv4.
            Err(e) => tracing::warn!(error = %e, "accept failed"),
        }
    }
}

/// The destination the client asked for, before the firewall redirected it here.
fn original_destination(stream: &TcpStream) -> std::io::Result<SocketAddrV4> {
    let addr = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::OriginalDst)?;
    Ok(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)),
        u16::from_be(addr.sin_port),
    ))
}

async fn handle(proxy: &Proxy, mut client: TcpStream, peer: SocketAddrV4) {
    let original = match original_destination(&client) {
        Ok(original) => original,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "no original destination");
            return;
        }
    };
    if client.local_addr().ok() == Some(SocketAddr::V4(original)) {
        tracing::debug!(%peer, "refused: not redirected here by the firewall");
        return;
    }
    let dir = proxy.policies.clone();
    let source = *peer.ip();
    let Ok(Some(policy)) =
        tokio::task::spawn_blocking(move || policy::policy_for(&dir, source)).await
    else {
        tracing::info!(%peer, "refused: no egress policy for this source");
        return;
    };
    let Some(_admitted) = proxy.admit(&policy.subnet) else {
        tracing::warn!(%peer, "refused: the sandbox has too many connections open");
        return;
    };
    let mut head = Vec::with_capacity(4096);
    let sniffed = match tokio::time::timeout(SNIFF_DEADLINE, read_head(&mut client, &mut head))
        .await
    {
        Ok(sniffed) => sniffed,
        Err(_) => {
            tracing::info!(%peer, %original, "closed: no TLS or HTTP request within the deadline");
            return;
        }
    };
    let port = original.port();
    let (name, tls) = match sniffed {
        Sniffed::Tls(name) => (name, true),
        Sniffed::Http(name) => (name, false),
        Sniffed::NeedMore | Sniffed::Unknown => {
            tracing::info!(%peer, %original, "closed: neither TLS nor HTTP");
            return;
        }
    };
    let allowed = name
        .as_deref()
        .filter(|name| policy.allows(name, port))
        .map(str::to_string);
    let Some(name) = allowed else {
        let shown = name.unwrap_or_else(|| original.ip().to_string());
        tracing::info!(%peer, host = %shown, port, "denied");
        refuse(&mut client, tls, 403, &denied_message(&shown, port)).await;
        return;
    };
    let upstream = match connect(proxy, &policy, &name, port).await {
        Ok(upstream) => upstream,
        Err(reason) => {
            tracing::info!(%peer, host = %name, port, %reason, "cannot connect");
            refuse(&mut client, tls, 502, &reason).await;
            return;
        }
    };
    tracing::info!(%peer, host = %name, port, "allowed");
    splice(client, upstream, &head).await;
}

/// Reads until the first bytes say what they are.
async fn read_head(client: &mut TcpStream, head: &mut Vec<u8>) -> Sniffed {
    let mut chunk = [0u8; 4096];
    loop {
        match sniff(head) {
            Sniffed::NeedMore => {}
            decided => return decided,
        }
        let room = MAX_SNIFF_BYTES.saturating_sub(head.len()).min(chunk.len());
        match client.read(&mut chunk[..room.max(1)]).await {
            Ok(0) | Err(_) => return Sniffed::Unknown,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Tells a refused client why (HTTP: a response with `status`; TLS: an alert), and closes.
async fn refuse(client: &mut TcpStream, tls: bool, status: u16, message: &str) {
    let bytes = if tls {
        // A fatal alert record: access_denied (49), or internal_error (80) when the
        // destination could not be reached.
        let description = if status == 403 { 49 } else { 80 };
        vec![0x15, 3, 3, 0, 2, 2, description]
    } else {
        let reason = if status == 403 {
            "Forbidden"
        } else {
            "Bad Gateway"
        };
        let body = format!("{message}\n");
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let _ = client.write_all(&bytes).await;
    let _ = client.shutdown().await;
}

/// Connects to `name`'s pin or DNS addresses on `port`, skipping forbidden ones.
async fn connect(
    proxy: &Proxy,
    policy: &Policy,
    name: &str,
    port: u16,
) -> Result<TcpStream, String> {
    let pin = policy.pinned(name);
    let candidates: Vec<Ipv4Addr> = match pin {
        Some(addr) => vec![addr],
        None => tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| format!("egress proxy: cannot resolve {name}: {e}"))?
            .filter_map(|a| match a {
                SocketAddr::V4(a) => Some(*a.ip()),
                SocketAddr::V6(_) => None,
            })
            .collect(),
    };
    let forbidden = Forbidden::now(&proxy.deny);
    let mut last = format!("egress proxy: {name} has no IPv4 address");
    for addr in candidates {
        if let Some(why) = forbidden.refuses(addr, pin.is_some()) {
            last = format!("egress to {name}:{port} is refused: {name} is at {addr}, {why}");
            continue;
        }
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((addr, port))).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => {
                last = format!("egress proxy: cannot connect to {name}:{port} ({addr}): {e}")
            }
            Err(_) => {
                last = format!("egress proxy: connecting to {name}:{port} ({addr}) timed out")
            }
        }
    }
    Err(last)
}

/// Sends `head` (what was read to decide) upstream, then copies both ways until both close.
async fn splice(mut client: TcpStream, mut upstream: TcpStream, head: &[u8]) {
    if upstream.write_all(head).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}
