//! Who serves an endpoint, as the operating system tells: the name the
//! transport's [`ServerTrust`](crate::transport::ServerTrust) judges, and
//! that [`Error::UntrustedServer`](crate::Error::UntrustedServer) reports.
//! Here, below both, so that the error need not know the transport;
//! public as `transport::ServerOwner`.

use std::fmt;

/// Who serves an endpoint, as the operating system tells.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerOwner {
    /// The owner of a named pipe, as a SID.
    Sid(String),
    /// The user of a Unix socket's peer.
    Uid(u32),
    /// The operating system named no owner the client can check (why: a
    /// pipe without an owner, say): never trusted. An owner that could
    /// not be read at all is no verdict but a failed attempt, made again.
    Unknown(String),
}

impl fmt::Display for ServerOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sid(sid) => write!(f, "owner {sid}"),
            Self::Uid(uid) => write!(f, "user {uid}"),
            Self::Unknown(why) => write!(f, "no owner that can be checked ({why})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_say_who_they_are() {
        assert_eq!(
            ServerOwner::Sid("S-1-5-18".into()).to_string(),
            "owner S-1-5-18"
        );
        assert_eq!(ServerOwner::Uid(7).to_string(), "user 7");
    }
}
