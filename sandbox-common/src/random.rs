//! Random tokens from the OS's random source: session keys, HMAC keys, private markers, ids.

/// The OS gave no random bytes. Usually its random source is missing or broken (no
/// `getrandom(2)`, no readable `/dev/urandom`), which a retry does not fix. The message is the
/// OS's error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RandomError(getrandom::Error);

/// `bytes` random bytes from the OS, as `2 * bytes` lowercase hex digits. There is no fallback,
/// since keys must be unguessable; a caller that needs only uniqueness picks its own on error.
pub fn random_hex(bytes: usize) -> Result<String, RandomError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(RandomError)?;
    Ok(crate::hex(&buf))
}

#[cfg(test)]
mod tests;
