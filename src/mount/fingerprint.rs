//! Credentials as a salted hash keyed by a secret of the node's: enough to
//! tell whether a share is mapped with the credentials a volume brings,
//! and no help to whoever reads a journal that leaked: without the key (a
//! file beside the journal, the owner's alone) no password can be tried
//! against it, however weak. Fingerprints of earlier builds (salted and
//! stretched SHA-256, without a key) are still read and matched.

use std::hash::{BuildHasher, Hasher};

use sha2::{Digest, Sha256};

const SALT_BYTES: usize = 16;
/// The node-local secret that keys the fingerprints: 32 random bytes.
pub(crate) type Key = [u8; 32];
/// Rounds of SHA-256 of the earlier, unkeyed fingerprints.
const ROUNDS: u32 = 10_000;
/// How a keyed fingerprint's text begins.
const KEYED: &str = "k1:";

/// A salt and a hash of the user name and password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    salt: [u8; SALT_BYTES],
    hash: [u8; 32],
    /// HMAC-SHA256 under the node's key (`true`), or an earlier build's
    /// stretched SHA-256.
    keyed: bool,
}

impl Fingerprint {
    /// The fingerprint of `username` and `password` under `key`, with a
    /// new salt.
    pub fn of(key: &Key, username: &str, password: &str) -> Self {
        let salt = new_salt();
        Self {
            hash: keyed(key, &salt, username, password),
            salt,
            keyed: true,
        }
    }

    /// Whether `username` and `password` are the credentials fingerprinted
    /// (under `key`, for a keyed one).
    pub fn matches(&self, key: &Key, username: &str, password: &str) -> bool {
        let hash = match self.keyed {
            true => keyed(key, &self.salt, username, password),
            false => stretched(&self.salt, username, password),
        };
        same_in_constant_time(&hash, &self.hash)
    }

    /// Whether it is an earlier build's unkeyed fingerprint, which a match
    /// should replace with a keyed one.
    pub fn is_legacy(&self) -> bool {
        !self.keyed
    }

    /// `k1:salt:hash` in hex (an earlier build's: `salt:hash`), for the
    /// journal.
    pub fn to_text(&self) -> String {
        let prefix = if self.keyed { KEYED } else { "" };
        format!("{prefix}{}:{}", hex(&self.salt), hex(&self.hash))
    }

    /// Reads [`to_text`](Self::to_text)'s form.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a credential fingerprint");
        let (keyed, rest) = match text.strip_prefix(KEYED) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (salt, hash) = rest.split_once(':').ok_or_else(bad)?;
        Ok(Self {
            salt: unhex(salt).ok_or_else(bad)?,
            hash: unhex(hash).ok_or_else(bad)?,
            keyed,
        })
    }
}

/// Whether `a` and `b` are equal, in a time that does not depend on
/// where they first differ.
fn same_in_constant_time(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let differences = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(differences) == 0
}

/// The salt and the credentials, as hashed: the user name's length first
/// keeps ("ab", "c") apart from ("a", "bc").
fn message<'a>(
    salt: &'a [u8],
    length: &'a [u8; 8],
    username: &'a str,
    password: &'a str,
) -> [&'a [u8]; 4] {
    [salt, length, username.as_bytes(), password.as_bytes()]
}

/// HMAC-SHA256 (RFC 2104) under `key` of the salt and the credentials.
fn keyed(key: &Key, salt: &[u8; SALT_BYTES], username: &str, password: &str) -> [u8; 32] {
    let length = (username.len() as u64).to_le_bytes();
    hmac(key, &message(salt, &length, username, password))
}

/// HMAC-SHA256 of `parts`, one after the other, under `key` (zero-padded
/// to SHA-256's block, as HMAC pads a short key).
fn hmac(key: &Key, parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// An earlier build's fingerprint: SHA-256 of the salt and the
/// credentials, hashed again with the salt `ROUNDS` times.
fn stretched(salt: &[u8; SALT_BYTES], username: &str, password: &str) -> [u8; 32] {
    let length = (username.len() as u64).to_le_bytes();
    let mut digest = Sha256::new();
    for part in message(salt, &length, username, password) {
        digest.update(part);
    }
    let mut hash: [u8; 32] = digest.finalize().into();
    for _ in 1..ROUNDS {
        let mut round = Sha256::new();
        round.update(salt);
        round.update(hash);
        hash = round.finalize().into();
    }
    hash
}

/// A salt that differs between fingerprints and processes: the standard
/// library's per-process random hasher keys, and a counter.
fn new_salt() -> [u8; SALT_BYTES] {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut salt = [0; SALT_BYTES];
    for (i, half) in salt.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(count);
        hasher.write_usize(i);
        half.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    salt
}

/// `bytes` as lower-case hex digits.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from `2 * N` hex digits; `None` for anything else.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.is_ascii() {
        return None;
    }
    let mut out = [0; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = [7; 32];

    #[test]
    fn the_same_credentials_match_and_others_do_not() {
        let print = Fingerprint::of(&KEY, "user", "pw");
        assert!(print.matches(&KEY, "user", "pw"));
        assert!(!print.matches(&KEY, "user", "pw2"));
        assert!(!print.matches(&KEY, "use", "rpw"));
        // Under another node's key, nothing matches: a leaked journal
        // alone lets no password be tried.
        assert!(!print.matches(&[8; 32], "user", "pw"));
        // Salted: the same credentials hash differently each time.
        assert_ne!(Fingerprint::of(&KEY, "user", "pw"), print);
        let text = print.to_text();
        assert!(text.starts_with("k1:") && !text.contains("pw"), "{text}");
        assert_eq!(Fingerprint::from_text(&text).unwrap(), print);
        assert!(Fingerprint::from_text("00:zz").is_err());
    }

    #[test]
    fn an_earlier_builds_fingerprint_still_matches() {
        let salt = [3; SALT_BYTES];
        let text = format!("{}:{}", hex(&salt), hex(&stretched(&salt, "user", "pw")));
        let print = Fingerprint::from_text(&text).unwrap();
        assert!(print.matches(&KEY, "user", "pw"));
        assert!(!print.matches(&KEY, "user", "other"));
        assert_eq!(print.to_text(), text);
    }

    #[test]
    fn the_hmac_is_rfc_4231s() {
        // RFC 4231, test case 2: a 4-byte key, zero-padded as ours are.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = hmac(&key, &[b"what do ya ", b"want for nothing?"]);
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
