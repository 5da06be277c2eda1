//! Credentials as a salted, stretched hash: enough to tell whether a share
//! is mapped with the credentials a volume brings, and slow to guess from:
//! a journal that leaks does not hand out the password of a weak account.

use std::hash::{BuildHasher, Hasher};

use sha2::{Digest, Sha256};

const SALT_BYTES: usize = 16;
/// Rounds of SHA-256 over the first: a guess costs as many (milliseconds),
/// where one round would let a weak password be found
/// quickly. Fingerprints are made once per share mapped.
const ROUNDS: u32 = 10_000;

/// A salt and SHA-256(salt, user name, password), hashed again `ROUNDS`
/// times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    salt: [u8; SALT_BYTES],
    hash: [u8; 32],
}

impl Fingerprint {
    /// The fingerprint of `username` and `password` with a new salt.
    pub fn of(username: &str, password: &str) -> Self {
        Self::salted(new_salt(), username, password)
    }

    fn salted(salt: [u8; SALT_BYTES], username: &str, password: &str) -> Self {
        let mut digest = Sha256::new();
        digest.update(salt);
        // The lengths keep ("ab", "c") apart from ("a", "bc").
        digest.update((username.len() as u64).to_le_bytes());
        digest.update(username.as_bytes());
        digest.update(password.as_bytes());
        let mut hash: [u8; 32] = digest.finalize().into();
        for _ in 1..ROUNDS {
            let mut round = Sha256::new();
            round.update(salt);
            round.update(hash);
            hash = round.finalize().into();
        }
        Self { salt, hash }
    }

    /// Whether `username` and `password` are the credentials fingerprinted.
    pub fn matches(&self, username: &str, password: &str) -> bool {
        Self::salted(self.salt, username, password).hash == self.hash
    }

    /// `salt:hash` in hex, for the journal.
    pub fn to_text(&self) -> String {
        format!("{}:{}", hex(&self.salt), hex(&self.hash))
    }

    /// Reads [`to_text`](Self::to_text)'s form.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a credential fingerprint");
        let (salt, hash) = text.split_once(':').ok_or_else(bad)?;
        Ok(Self {
            salt: unhex(salt).ok_or_else(bad)?,
            hash: unhex(hash).ok_or_else(bad)?,
        })
    }
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
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

    #[test]
    fn the_same_credentials_match_and_others_do_not() {
        let print = Fingerprint::of("user", "pw");
        assert!(print.matches("user", "pw"));
        assert!(!print.matches("user", "pw2"));
        assert!(!print.matches("use", "rpw"));
        // Salted: the same credentials hash differently each time.
        assert_ne!(Fingerprint::of("user", "pw"), print);
        let text = print.to_text();
        assert!(!text.contains("pw"));
        assert_eq!(Fingerprint::from_text(&text).unwrap(), print);
        assert!(Fingerprint::from_text("00:zz").is_err());
    }
}
