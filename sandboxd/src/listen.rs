//! Where sandboxd listens: a TCP address, or a Unix domain socket (for sandboxes without a
//! network, reached through a socket file in a directory shared with the host).

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::net::{TcpListener, UnixListener};

use crate::{Cli, RunError};

/// Where sandboxd listens. Displays as a client address: `http://IP:PORT` or `unix:PATH`
/// (what the `client` crate and `sbx --url` accept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix domain socket (absolute path).
    Unix(PathBuf),
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "http://{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// A bound listening socket, ready for [`crate::serve`]. A Unix socket's file is removed when the
/// listener is dropped (if it is still the socket this listener bound).
#[derive(Debug)]
pub(crate) struct Listener(Bound);

#[derive(Debug)]
enum Bound {
    Tcp(TcpListener),
    Unix {
        listener: UnixListener,
        file: SocketFile,
    },
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Listener(Bound::Tcp(listener))
    }
}

impl Listener {
    /// Binds what `cli` asks for: the `--unix-socket` if given (PORT and `--host` are then
    /// ignored), else `--host`:PORT over TCP.
    pub(crate) async fn bind(cli: &Cli) -> Result<Listener, RunError> {
        match &cli.unix_socket {
            Some(path) => Self::bind_unix(path).await,
            None => Self::bind_tcp(SocketAddr::new(cli.host, cli.port)).await,
        }
    }

    /// Binds a TCP address (port 0 picks a free port).
    async fn bind_tcp(addr: SocketAddr) -> Result<Listener, RunError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| RunError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        Ok(listener.into())
    }

    /// Binds a Unix domain socket at `path` (made absolute against the current directory).
    ///
    /// Creates the parent directory when missing. A socket file already at `path` is replaced
    /// unless a process still accepts connections on it; any other kind of file there (a regular
    /// file, a directory, a symlink) is left alone and the bind fails. The socket is made mode
    /// 0666: the session API key protects the API, and the directory's permissions decide who
    /// can reach the socket at all.
    async fn bind_unix(path: &Path) -> Result<Listener, RunError> {
        let path = std::path::absolute(path)
            .map_err(|e| RunError::Config(format!("bad --unix-socket {}: {e}", path.display())))?;
        let bind_error = |source| RunError::Bind {
            addr: ListenAddr::Unix(path.clone()).to_string(),
            source,
        };
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(|e| {
                bind_error(std::io::Error::new(
                    e.kind(),
                    format!("cannot create the directory {}: {e}", parent.display()),
                ))
            })?;
        }
        remove_stale_socket(&path).await.map_err(bind_error)?;
        let listener = UnixListener::bind(&path).map_err(bind_error)?;
        // From here on the guard removes the file, also when a later step fails.
        let file = SocketFile::bound(path.clone()).map_err(bind_error)?;
        {
            use std::os::unix::fs::PermissionsExt;
            tokio::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))
                .await
                .map_err(bind_error)?;
        }
        Ok(Listener(Bound::Unix { listener, file }))
    }

    /// Serves `app` within `limits` until `shutdown` resolves, then lets in-flight requests
    /// finish for a short grace period (commands may run for minutes: they are not waited
    /// for). A Unix socket's file is removed afterwards.
    pub(crate) async fn serve(
        self,
        app: axum::Router,
        limits: http_guard::Limits,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        match self.0 {
            Bound::Tcp(listener) => {
                // Streamed lines and terminal bytes go out at once: without TCP_NODELAY the
                // first line after the headers waits for the client's delayed ACK (40 ms).
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                http_guard::serve(listener, app, limits, shutdown).await
            }
            Bound::Unix { listener, file } => {
                http_guard::serve(listener, app, limits, shutdown).await;
                drop(file);
            }
        }
    }

    /// Where this listener accepts connections.
    pub(crate) fn local_addr(&self) -> std::io::Result<ListenAddr> {
        match &self.0 {
            Bound::Tcp(listener) => listener.local_addr().map(ListenAddr::Tcp),
            Bound::Unix { file, .. } => Ok(ListenAddr::Unix(file.path.clone())),
        }
    }
}

/// Removes a leftover socket file at `path` (from a daemon that did not shut down cleanly).
/// Refuses to remove anything that is not a socket, or a socket a process still listens on.
async fn remove_stale_socket(path: &Path) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::FileTypeExt;
    let meta = match tokio::fs::symlink_metadata(path).await {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            "the path exists and is not a socket; refusing to remove it",
        ));
    }
    if tokio::net::UnixStream::connect(path).await.is_ok() {
        return Err(Error::new(
            ErrorKind::AddrInUse,
            "another process is listening on this socket",
        ));
    }
    tracing::info!(path = %path.display(), "removing a stale socket file");
    match tokio::fs::remove_file(path).await {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The file of a bound Unix socket; removed on drop if it is still the same socket (another
/// daemon may have replaced it since).
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    /// Device and inode of the socket file.
    id: (u64, u64),
}

impl SocketFile {
    fn bound(path: PathBuf) -> std::io::Result<SocketFile> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(&path)?;
        Ok(SocketFile {
            path,
            id: (meta.dev(), meta.ino()),
        })
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let same = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|meta| (meta.dev(), meta.ino()) == self.id);
        if !same {
            return;
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the socket file");
        }
    }
}
