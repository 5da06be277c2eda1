//! The conformance suite: checks that an implementation of a group trait
//! follows the rules CSI Proxy's host layer follows (and
//! [`FakeHost`](super::FakeHost) with it).
//!
//! One function per group, each taking any implementation of that group's
//! trait and a fixture that says what the host holds: a
//! [`FakeHost`](super::FakeHost), the [`CsiProxy`] handles of a fake proxy
//! at any wire version, a driver's own mock, or a real node. The crate runs
//! the same functions against every backend it has; a driver can run them
//! against its mocks, so they agree with production.
//!
//! A check either passes, with a [`Report`] of the operations that
//! succeeded and those the backend answered
//! [`Error::Unsupported`] (an older wire version
//! lacks them; the suite carries on without them), or fails with the
//! first [`Violation`]. The suites change the host: run them on a fresh
//! host, or on a node set aside for it, whose fixture is true when the
//! suite starts.
//!
//! ```
//! use csi_proxy_client::testing::conformance::{self, Fixture};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let fixture = Fixture::default();
//! let host = fixture.fake_host();
//! let report = conformance::filesystem(&host, &fixture.filesystem).await.unwrap();
//! assert!(report.unsupported.is_empty());
//! # }
//! ```

mod disk;
mod filesystem;
mod fixture;
mod iscsi;
mod smb;
mod system;
mod volume;

use std::fmt;
use std::future::Future;

pub use disk::disk;
pub use filesystem::filesystem;
pub use fixture::{
    DiskFixture, FilesystemFixture, Fixture, IscsiFixture, IscsiTargetFixture, ServiceFixture,
    SmbFixture, SystemFixture, VolumeFixture,
};
pub use iscsi::iscsi;
pub use smb::smb;
pub use system::system;
pub use volume::volume;

use crate::capability::Operation;
use crate::client::CsiProxy;
use crate::error::{Error, Result};

/// What a passing check saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The operations that succeeded, sorted, each once.
    pub succeeded: Vec<Operation>,
    /// The operations the backend does not offer
    /// ([`Error::Unsupported`]), sorted, each
    /// once.
    pub unsupported: Vec<Operation>,
}

impl Report {
    /// Adds another report's operations.
    pub fn merge(&mut self, other: Report) {
        self.succeeded.extend(other.succeeded);
        self.unsupported.extend(other.unsupported);
        self.tidy();
    }

    fn tidy(&mut self) {
        for ops in [&mut self.succeeded, &mut self.unsupported] {
            ops.sort();
            ops.dedup();
        }
    }
}

/// A rule the implementation broke: which operation, and what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The operation whose answer broke the rule.
    pub operation: Operation,
    /// What was expected and what came.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.operation, self.detail)
    }
}

impl std::error::Error for Violation {}

/// The outcome of a check.
pub type Outcome = std::result::Result<Report, Violation>;

/// Runs the suite of every group `proxy` has, in the order a node plugin
/// uses them (disk, volume, filesystem, SMB, iSCSI, system), and merges
/// their reports. A group `proxy` was not given is skipped.
pub async fn all(proxy: &CsiProxy, fixture: &Fixture) -> Outcome {
    let mut report = Report::default();
    if let Ok(api) = proxy.disk() {
        report.merge(disk(&*api, &fixture.disk).await?);
    }
    if let Ok(api) = proxy.volume() {
        report.merge(volume(&*api, &fixture.volume).await?);
    }
    if let Ok(api) = proxy.filesystem() {
        report.merge(filesystem(&*api, &fixture.filesystem).await?);
    }
    if let Ok(api) = proxy.smb() {
        report.merge(smb(&*api, &fixture.smb).await?);
    }
    if let Ok(api) = proxy.iscsi() {
        report.merge(iscsi(&*api, &fixture.iscsi).await?);
    }
    if let Ok(api) = proxy.system() {
        report.merge(system(&*api, &fixture.system).await?);
    }
    Ok(report)
}

/// Runs a group's steps and keeps its report.
#[derive(Default)]
struct Steps {
    report: Report,
}

impl Steps {
    /// A call that must succeed: its value, or `None` when the backend does
    /// not offer `op`.
    async fn ok<T>(
        &mut self,
        op: Operation,
        call: impl Future<Output = Result<T>>,
    ) -> std::result::Result<Option<T>, Violation> {
        match call.await {
            Ok(value) => {
                self.report.succeeded.push(op);
                Ok(Some(value))
            }
            Err(error) if unsupported(op, &error) => {
                self.report.unsupported.push(op);
                Ok(None)
            }
            Err(error) => Err(violation(op, format!("failed: {error}"))),
        }
    }

    /// A call whose answer must be `wanted` (`what` says what it is, for
    /// the violation); nothing to check when the backend does not offer
    /// `op`.
    async fn answers<T: PartialEq + fmt::Debug>(
        &mut self,
        op: Operation,
        call: impl Future<Output = Result<T>>,
        wanted: T,
        what: &str,
    ) -> std::result::Result<(), Violation> {
        match self.ok(op, call).await? {
            Some(seen) => ensure_eq(&seen, &wanted, op, what),
            None => Ok(()),
        }
    }

    /// A call that the rules make fail: `Ok` when it failed as `expected`
    /// says, or the backend does not offer `op`.
    async fn fails<T: fmt::Debug>(
        &mut self,
        op: Operation,
        call: impl Future<Output = Result<T>>,
        expected: impl FnOnce(&Error) -> bool,
        why: &str,
    ) -> std::result::Result<(), Violation> {
        match call.await {
            Err(error) if unsupported(op, &error) => {
                self.report.unsupported.push(op);
                Ok(())
            }
            Err(error) if expected(&error) => {
                self.report.succeeded.push(op);
                Ok(())
            }
            Err(error) => Err(violation(op, format!("{why}, but failed with {error}"))),
            Ok(value) => Err(violation(op, format!("{why}, but answered {value:?}"))),
        }
    }

    fn finish(mut self) -> Outcome {
        self.report.tidy();
        Ok(self.report)
    }
}

/// Whether `error` is the backend saying it lacks `op`.
fn unsupported(op: Operation, error: &Error) -> bool {
    matches!(error, Error::Unsupported { operation, needed, .. }
        if *operation == op && Some(*needed) == op.available_since())
}

/// A failure on the host (what the proxy reports when Windows refuses).
fn is_host_error(error: &Error) -> bool {
    matches!(error, Error::Host { .. })
}

fn violation(operation: Operation, detail: impl Into<String>) -> Violation {
    Violation {
        operation,
        detail: detail.into(),
    }
}

/// `Ok` when `holds`, else a violation of `op` saying what was expected.
fn ensure(
    holds: bool,
    op: Operation,
    expected: impl FnOnce() -> String,
) -> std::result::Result<(), Violation> {
    if holds {
        Ok(())
    } else {
        Err(violation(op, expected()))
    }
}

/// `Ok` when `seen` equals `wanted`, else a violation of `op` showing both.
fn ensure_eq<T: PartialEq + fmt::Debug>(
    seen: &T,
    wanted: &T,
    op: Operation,
    what: &str,
) -> std::result::Result<(), Violation> {
    ensure(seen == wanted, op, || {
        format!("{what}: expected {wanted:?}, got {seen:?}")
    })
}
