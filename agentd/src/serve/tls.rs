//! TLS for the runtime API and the front door (rustls): the certificate chain and private key
//! come from PEM files; [`TlsListener`] hands `http_guard::serve` connections whose handshake
//! is done. Handshakes run on their own tasks with a deadline, so a client that stalls in one
//! holds up no one else.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::ServeError;

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way or done and not yet taken by the accept loop, at most; further
/// connections wait in the kernel's backlog.
const MAX_HANDSHAKES: usize = 64;

/// Where the service's certificate chain and key are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, the service's own first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The rustls server configuration of `files` (HTTP/1.1 only, as `http_guard` serves).
pub(super) fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    let bad = |path: &Path, e: &dyn std::fmt::Display| {
        ServeError::Config(format!("TLS: {}: {e}", path.display()))
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| bad(&files.cert, &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&files.cert, &e))?;
    if certs.is_empty() {
        return Err(bad(&files.cert, &"no certificate in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| bad(&files.key, &e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Config(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServeError::Config(format!("TLS: the certificate and key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A listener whose connections have done their TLS handshake.
#[derive(Debug)]
pub(super) struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, std::net::SocketAddr)>,
    local: std::net::SocketAddr,
    acceptor: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener`, handshaking each connection with `config` on its own task.
    pub(super) fn new(
        listener: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (send, ready) = mpsc::channel(MAX_HANDSHAKES);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        let tls = TlsAcceptor::from(config);
        let acceptor = tokio::spawn(async move {
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (tls, send) = (tls.clone(), send.clone());
                tokio::spawn(async move {
                    let _slot = slot;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let _ = send.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            local,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The acceptor never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
