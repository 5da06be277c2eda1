//! One group's negotiation: its candidate versions tried in order, each
//! attempt reported, and the outcome recorded.

use std::time::Instant;

use super::{Attempt, AttemptOutcome, Connection, GroupReport};
use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::metrics;
use crate::served_by::ServedBy;
use crate::transport::{connect, ConnectFailure, ConnectOptions, Timeouts, Transport};
use crate::version::ApiVersion;

/// Tries `candidates` in order and keeps the first endpoint that opens
/// and is served by a trusted owner. Endpoints that are absent, served by
/// an untrusted owner, or that fail before their owner is known are
/// passed over for the older ones: a squatter on a newer version's name
/// may keep its pipe busy or closed to the client, and must not keep the
/// group from an older version the proxy serves. A failure passed over so
/// is reported as suspect once an older version is chosen. A trusted
/// server that fails ends the group with its error (the proxy is broken,
/// and an older version would hide it); with no version chosen otherwise,
/// the first failure is the group's error.
pub(super) async fn negotiate_group(
    transport: &Transport,
    options: &ConnectOptions,
    group: ApiGroup,
    candidates: &[ApiVersion],
) -> (GroupReport, Result<Connection>) {
    let started = Instant::now();
    let mut attempts = Vec::with_capacity(candidates.len());
    let mut chosen = None;
    let mut failed = None;
    let mut untrusted = None;
    for (i, &version) in candidates.iter().enumerate() {
        let address = transport.address(group, version);
        let timeouts = if i + 1 < candidates.len() {
            Timeouts::PassOn
        } else {
            Timeouts::TryAgain
        };
        match connect(transport, &address, options, timeouts).await {
            Ok(channel) => {
                let newer_absent = attempts
                    .iter()
                    .any(|a: &Attempt| a.outcome == AttemptOutcome::Absent);
                attempts.push(Attempt::new(version, &address, AttemptOutcome::Connected));
                chosen = Some(Connection {
                    group,
                    version,
                    address,
                    channel,
                    newer_absent,
                });
                break;
            }
            Err(ConnectFailure::Absent(e)) => {
                tracing::debug!(%version, %address, error = %e, "endpoint absent");
                attempts.push(Attempt::new(version, &address, AttemptOutcome::Absent));
            }
            Err(ConnectFailure::Untrusted(owner)) => {
                crate::transport::report_untrusted(&address, &owner);
                metrics::passed_over(group, version, metrics::PassedOver::Owner);
                attempts.push(Attempt::new(
                    version,
                    &address,
                    AttemptOutcome::Untrusted(owner.to_string()),
                ));
                untrusted.get_or_insert((address, owner));
            }
            Err(ConnectFailure::Unverified { error: e, .. }) => {
                tracing::debug!(%version, %address, error = %e, "endpoint failed, trying older versions");
                attempts.push(Attempt::new(
                    version,
                    &address,
                    AttemptOutcome::Failed(e.to_string()),
                ));
                failed.get_or_insert(e);
            }
            Err(ConnectFailure::Failed { error: e, .. }) => {
                // A trusted server failed: the proxy itself is broken, and
                // an older version would hide it.
                attempts.push(Attempt::new(
                    version,
                    &address,
                    AttemptOutcome::Failed(e.to_string()),
                ));
                failed = Some(e);
                break;
            }
        }
    }
    let outcome = match chosen {
        Some(connection) => {
            // What failed before an older version answered from a trusted
            // owner is suspect, not the group's error.
            for attempt in &mut attempts {
                if let AttemptOutcome::Failed(why) = &attempt.outcome {
                    crate::transport::report_suspect(&attempt.address, why);
                    metrics::passed_over(group, attempt.version, metrics::PassedOver::Suspect);
                    attempt.outcome = AttemptOutcome::Suspect(why.clone());
                }
            }
            Ok(connection)
        }
        None => Err(match (failed, untrusted) {
            (Some(error), _) => error,
            (None, Some((address, owner))) => Error::UntrustedServer {
                group,
                address,
                owner,
            },
            (None, None) => Error::NotServed {
                group,
                tried: attempts.iter().map(|a| a.address.clone()).collect(),
            },
        }),
    };
    let report = GroupReport {
        group,
        chosen: outcome.as_ref().ok().map(Connection::version),
        served_by: outcome.is_ok().then_some(ServedBy::CsiProxy),
        attempts,
        elapsed: started.elapsed(),
    };
    (report, outcome)
}

/// Fills the negotiation span, logs the result and counts it (a failure
/// `quiet`ly: at debug level, uncounted).
pub(super) fn record(report: &GroupReport, outcome: &Result<Connection>, quiet: bool) {
    let span = tracing::Span::current();
    let tried: Vec<String> = report
        .attempts
        .iter()
        .map(|a| a.version.to_string())
        .collect();
    span.record("tried", tracing::field::display(tried.join(",")));
    span.record("elapsed_ms", report.elapsed.as_millis() as u64);
    if let (true, Err(error)) = (quiet, outcome) {
        tracing::debug!(%error, "no version negotiated");
        return;
    }
    metrics::negotiated(
        report.group,
        match outcome {
            Ok(_) => "served",
            Err(Error::NotServed { .. }) => "not_served",
            Err(Error::UntrustedServer { .. }) => "untrusted_server",
            Err(_) => "failed",
        },
    );
    match outcome {
        Ok(connection) => {
            span.record("chosen", tracing::field::display(connection.version));
            tracing::info!(version = %connection.version, address = %connection.address, "negotiated");
        }
        // A group this proxy does not serve is common and often not needed
        // (iscsi and system by most drivers): a required one fails the
        // client's start, which says so. Anything else is a fault.
        Err(error @ Error::NotServed { .. }) => {
            tracing::info!(%error, "not served by this node's CSI Proxy")
        }
        Err(error) => tracing::warn!(%error, "no version negotiated"),
    }
}
