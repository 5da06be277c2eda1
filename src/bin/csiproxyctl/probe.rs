//! `csiproxyctl probe`: per group, every endpoint (named pipe or Unix
//! socket) tried, the version chosen and the operations available at it.

use std::time::Duration;

use csi_proxy_client::{
    negotiate::{AttemptOutcome, Negotiator, VersionPolicy},
    transport::Transport,
    ApiGroup, Operation, Support,
};
use serde_json::json;

use crate::failure::{Failure, Outcome};
use crate::output::{emit, Records};
use crate::transport_json;

/// Probes every group, waiting up to `wait` for those of `require` to be
/// served (with none given, for any); fails when one of them is not (with
/// none given: when no group is).
pub async fn run(
    transport: Transport,
    policy: VersionPolicy,
    require: &[ApiGroup],
    wait: Duration,
    json: bool,
) -> Outcome {
    // Waits for the groups given, or with none, for any group.
    let negotiated = Negotiator::new(transport.clone())
        .policy(policy)
        .negotiate_waiting(&ApiGroup::ALL, require, wait)
        .await?;
    let report = negotiated.report();
    // The column is named by what the endpoints are.
    let endpoint: &'static [&'static str] = if transport.is_named_pipes() {
        &["group", "pipe", "result"]
    } else {
        &["group", "socket", "result"]
    };
    let mut endpoints = Records::many(endpoint);
    let mut available = Records::many(&["group", "version", "operations"]);
    let mut groups = Vec::new();
    for group in report.groups() {
        let operations: Vec<(Operation, Support)> = match group.chosen {
            Some(v) => Operation::of_group(group.group)
                .map(|op| (op, op.support(v)))
                .filter(|(_, s)| s.is_available())
                .collect(),
            None => Vec::new(),
        };
        for attempt in &group.attempts {
            endpoints.push(vec![
                json!(group.group.as_str()),
                json!(attempt.address),
                json!(outcome(&attempt.outcome)),
            ]);
        }
        let listed: Vec<String> = operations
            .iter()
            .map(|(op, s)| match s {
                Support::Emulated => format!("{} (emulated)", op.name()),
                _ => op.name().to_owned(),
            })
            .collect();
        available.push(vec![
            json!(group.group.as_str()),
            json!(group.chosen.map_or("not served".into(), |v| v.to_string())),
            json!(listed.join(", ")),
        ]);
        groups.push(json!({
            "group": group.group.as_str(),
            "chosen": group.chosen.map(|v| v.to_string()),
            "attempts": group.attempts.iter().map(|a| json!({
                "version": a.version.to_string(),
                "address": a.address,
                "outcome": outcome(&a.outcome),
            })).collect::<Vec<_>>(),
            "operations": operations.iter().map(|(op, s)| json!({
                "name": op.name(),
                "rpc": match s { Support::Native(rpc) => Some(*rpc), _ => None },
                "emulated": *s == Support::Emulated,
            })).collect::<Vec<_>>(),
        }));
    }
    // One document with --json: the groups with their attempts and
    // operations, and the failure, if any, as its `error`.
    let document = json!({ "transport": transport_json(&transport), "groups": groups });
    if !json {
        endpoints.print(false);
        emit("");
        available.print(false);
    }
    let missing: Vec<&str> = require
        .iter()
        .filter(|&&g| report.chosen(g).is_none())
        .map(|g| g.as_str())
        .collect();
    let nothing = report.groups().iter().all(|g| g.chosen.is_none());
    let failure = match (missing.is_empty(), require.is_empty() && nothing) {
        (false, _) => Failure::not_served(format!("not served: {}", missing.join(", "))),
        (true, true) => Failure::not_served("no group is served"),
        (true, false) => {
            if json {
                emit(&document.to_string());
            }
            return Ok(());
        }
    };
    Err(failure.in_document(document))
}

fn outcome(outcome: &AttemptOutcome) -> String {
    match outcome {
        AttemptOutcome::Connected => "connected".into(),
        AttemptOutcome::Absent => "absent".into(),
        AttemptOutcome::Failed(why) => format!("failed: {why}"),
        AttemptOutcome::Untrusted(owner) => format!("untrusted: {owner}"),
        AttemptOutcome::Suspect(why) => format!("suspect: {why}"),
        _ => "unknown".into(),
    }
}
