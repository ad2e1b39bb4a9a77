//! What the first bytes of a connection say about where it goes: the server name of a TLS
//! ClientHello (SNI), or the `Host` header of an HTTP/1 request. Pure functions of the bytes
//! read so far; the proxy reads more while they answer [`Sniffed::NeedMore`].

/// The most bytes read before deciding: a ClientHello's records or an HTTP request's head
/// longer than this is refused.
pub(super) const MAX_SNIFF_BYTES: usize = 32 * 1024;

/// What the first bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Sniffed {
    /// A TLS ClientHello, with its server name (none: the client sent no SNI).
    Tls(Option<String>),
    /// An HTTP/1 request head, with its `Host` header without the port (none: no header).
    Http(Option<String>),
    /// Not enough bytes yet to tell.
    NeedMore,
    /// Neither TLS nor HTTP/1 (or malformed, or too long).
    Unknown,
}

/// Decides what `bytes` (the first bytes the client sent) are.
pub(super) fn sniff(bytes: &[u8]) -> Sniffed {
    match bytes.first() {
        None => Sniffed::NeedMore,
        Some(0x16) => tls(bytes),
        Some(c) if c.is_ascii_uppercase() => http(bytes),
        Some(_) => Sniffed::Unknown,
    }
}

/// The TLS handshake records at the start of `bytes`, their payloads joined, until the first
/// handshake message (the ClientHello) is complete.
fn tls(bytes: &[u8]) -> Sniffed {
    let mut handshake = Vec::new();
    let mut rest = bytes;
    loop {
        if rest.len() < 5 {
            return more_or_unknown(bytes);
        }
        // Record header: type (handshake), version (3.x), length.
        if rest[0] != 0x16 || rest[1] != 3 {
            return Sniffed::Unknown;
        }
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        if len == 0 || len > 16 * 1024 + 256 {
            return Sniffed::Unknown;
        }
        let Some(payload) = rest.get(5..5 + len) else {
            return more_or_unknown(bytes);
        };
        handshake.extend_from_slice(payload);
        rest = &rest[5 + len..];
        if handshake.len() >= 4 {
            if handshake[0] != 1 {
                return Sniffed::Unknown; // Not a ClientHello.
            }
            let body_len = usize::from(handshake[1]) << 16
                | usize::from(handshake[2]) << 8
                | usize::from(handshake[3]);
            if let Some(body) = handshake.get(4..4 + body_len) {
                return match client_hello_sni(body) {
                    Some(sni) => Sniffed::Tls(sni),
                    None => Sniffed::Unknown,
                };
            }
        }
    }
}

fn more_or_unknown(bytes: &[u8]) -> Sniffed {
    if bytes.len() >= MAX_SNIFF_BYTES {
        Sniffed::Unknown
    } else {
        Sniffed::NeedMore
    }
}

/// A cursor over big-endian length-prefixed fields; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }
    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }
    /// A field with a one-byte length.
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(n)
    }
    /// A field with a two-byte length.
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(n)
    }
}

/// The server name of a ClientHello body: `Some(None)` when it has no SNI extension, `None`
/// when it is malformed.
fn client_hello_sni(body: &[u8]) -> Option<Option<String>> {
    let mut r = Reader(body);
    r.take(2)?; // legacy_version
    r.take(32)?; // random
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    if r.0.is_empty() {
        return Some(None); // No extensions at all.
    }
    let mut extensions = Reader(r.vec16()?);
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        if kind != 0 {
            continue; // Not server_name.
        }
        let mut list = Reader(Reader(data).vec16()?);
        while !list.0.is_empty() {
            let name_type = list.u8()?;
            let name = list.vec16()?;
            if name_type == 0 {
                return std::str::from_utf8(name).ok().map(|n| Some(n.to_string()));
            }
        }
        return Some(None);
    }
    Some(None)
}

/// The `Host` of an HTTP/1 request head.
fn http(bytes: &[u8]) -> Sniffed {
    let Some(end) = find(bytes, b"\r\n\r\n").or_else(|| find(bytes, b"\n\n")) else {
        // The request line must look like one as soon as it is there.
        if let Some(line_end) = find(bytes, b"\n")
            && !is_request_line(&bytes[..line_end])
        {
            return Sniffed::Unknown;
        }
        return more_or_unknown(bytes);
    };
    let Ok(head) = std::str::from_utf8(&bytes[..end]) else {
        return Sniffed::Unknown;
    };
    let mut lines = head.lines();
    let Some(request_line) = lines.next() else {
        return Sniffed::Unknown;
    };
    if !is_request_line(request_line.as_bytes()) {
        return Sniffed::Unknown;
    }
    let host = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| strip_port(value.trim()).to_string());
    Sniffed::Http(host)
}

/// `METHOD TARGET HTTP/1.x`.
fn is_request_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(line) = std::str::from_utf8(line) else {
        return false;
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(_target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !method.is_empty()
        && method.bytes().all(|b| b.is_ascii_uppercase())
        && version.starts_with("HTTP/1.")
}

/// A `Host` value without its port (`[::1]:80` keeps the brackets' contents).
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;
