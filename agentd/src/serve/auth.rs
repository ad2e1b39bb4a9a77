//! The service's API keys: checked in constant time, and turned into a [`Caller`], the
//! identity that owns the sandboxes started with that key.

use sha2::{Digest, Sha256};

/// Who started a sandbox: a fingerprint of the API key (never the key itself), so that only
/// callers holding that key find the sandbox, learn its session key, or stop it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Caller(String);

impl Caller {
    /// The fingerprint, as stored in the state files.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The configured keys (only their SHA-256 digests are kept).
#[derive(Debug, Clone)]
pub(crate) struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// The keys; empty ones are dropped.
    pub(crate) fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> ApiKeys {
        ApiKeys {
            digests: keys
                .into_iter()
                .filter(|k| !k.is_empty())
                .map(digest)
                .collect(),
        }
    }

    /// Whether there is no key at all (the service refuses to start then).
    pub(crate) fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The owner for `given` if it is one of the keys. Every key is compared, each in constant
    /// time, so the answer's timing says nothing about which key matched or how closely.
    pub(crate) fn verify(&self, given: &[u8]) -> Option<Caller> {
        let given = digest_bytes(given);
        let mut matched = None;
        for key in &self.digests {
            let difference = key
                .iter()
                .zip(&given)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if difference == 0 {
                matched = Some(*key);
            }
        }
        matched.map(|key| fingerprint(&key))
    }
}

/// The caller that holds `key` (whether or not it is one of the service's keys).
pub(crate) fn caller_of(key: &str) -> Caller {
    fingerprint(&digest(key))
}

/// Whether `given` is `key`, compared in constant time (of their digests).
pub(crate) fn same_key(given: &[u8], key: &str) -> bool {
    digest_bytes(given)
        .iter()
        .zip(&digest(key))
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

fn fingerprint(digest: &[u8; 32]) -> Caller {
    Caller(sandbox_common::hex(&digest[..16]))
}

fn digest(key: &str) -> [u8; 32] {
    digest_bytes(key.as_bytes())
}

fn digest_bytes(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests;
