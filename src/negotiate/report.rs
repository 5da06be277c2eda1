//! What negotiation tried and chose, for people and for programs.

use std::fmt;
use std::time::Duration;

use crate::group::ApiGroup;
use crate::served_by::ServedBy;
use crate::version::ApiVersion;

/// What happened at one endpoint during negotiation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// It opened; this version was chosen.
    Connected,
    /// Nothing listens there: the version is not served (or the pipe is not
    /// mounted into this container).
    Absent,
    /// It exists but could not be used (why), and no older version was
    /// served by a trusted owner either: the group's error is the first
    /// such failure.
    Failed(String),
    /// It answered, but its server is not trusted to be the proxy (who
    /// serves it, as [`ServerOwner`](crate::transport::ServerOwner) says): passed
    /// over, nothing sent.
    Untrusted(String),
    /// It exists but could not be used (why: busy for the whole connect
    /// timeout, access denied, not a socket), while an older version was
    /// then served by a trusted owner and chosen: passed over as a
    /// possible squatter, which can keep a pipe busy or closed to the
    /// client without ever being opened.
    Suspect(String),
}

/// One endpoint tried during negotiation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The version tried.
    pub version: ApiVersion,
    /// Its pipe or socket.
    pub address: String,
    /// What happened.
    pub outcome: AttemptOutcome,
}

impl Attempt {
    pub(crate) fn new(version: ApiVersion, address: &str, outcome: AttemptOutcome) -> Self {
        Self {
            version,
            address: address.to_owned(),
            outcome,
        }
    }
}

/// Negotiation of one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupReport {
    /// The group.
    pub group: ApiGroup,
    /// The version chosen, if any.
    pub chosen: Option<ApiVersion>,
    /// What serves the group: CSI Proxy when a version was chosen, the host
    /// when it took a group the proxy does not serve
    /// ([`Backend::Automatic`](crate::Backend::Automatic)) or every group
    /// ([`Backend::Host`](crate::Backend::Host)); `None` when nothing does.
    pub served_by: Option<ServedBy>,
    /// Every endpoint tried, in order.
    pub attempts: Vec<Attempt>,
    /// How long negotiating this group took.
    pub elapsed: Duration,
}

/// Negotiation of every requested group, in [`ApiGroup::ALL`] order.
/// Its `Display` form is a table, one line per group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NegotiationReport {
    pub(crate) groups: Vec<GroupReport>,
}

impl NegotiationReport {
    /// One entry per negotiated group.
    pub fn groups(&self) -> &[GroupReport] {
        &self.groups
    }

    /// The report of one group, if it was negotiated.
    pub fn group(&self, group: ApiGroup) -> Option<&GroupReport> {
        self.groups.iter().find(|r| r.group == group)
    }

    /// The version chosen for `group`, if any.
    pub fn chosen(&self, group: ApiGroup) -> Option<ApiVersion> {
        self.group(group).and_then(|r| r.chosen)
    }

    /// Takes `report` in place of what this report says of its group.
    pub(crate) fn put(&mut self, report: GroupReport) {
        self.groups.retain(|r| r.group != report.group);
        self.groups.push(report);
        // Kept in `ApiGroup::ALL` order.
        self.groups.sort_by_key(|r| r.group);
    }

    /// Records that the host serves `groups`.
    pub(crate) fn served_by_host(&mut self, groups: &[ApiGroup]) {
        for &group in groups {
            match self.groups.iter_mut().find(|r| r.group == group) {
                Some(report) => report.served_by = Some(ServedBy::Host),
                None => self.groups.push(GroupReport {
                    group,
                    chosen: None,
                    served_by: Some(ServedBy::Host),
                    attempts: Vec::new(),
                    elapsed: Duration::ZERO,
                }),
            }
        }
        // Kept in `ApiGroup::ALL` order.
        self.groups.sort_by_key(|r| r.group);
    }
}

impl fmt::Display for NegotiationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<11} {:<9} TRIED", "GROUP", "VERSION")?;
        for report in &self.groups {
            let chosen = match (report.chosen, report.served_by) {
                (Some(version), _) => version.to_string(),
                (None, Some(by)) => by.to_string(),
                (None, None) => "-".to_owned(),
            };
            let tried: Vec<String> = report
                .attempts
                .iter()
                .map(|a| match &a.outcome {
                    AttemptOutcome::Connected => format!("{} (connected)", a.version),
                    AttemptOutcome::Absent => format!("{} (absent)", a.version),
                    AttemptOutcome::Failed(why) => format!("{} (failed: {why})", a.version),
                    AttemptOutcome::Untrusted(owner) => {
                        format!("{} (untrusted: {owner})", a.version)
                    }
                    AttemptOutcome::Suspect(why) => format!("{} (suspect: {why})", a.version),
                })
                .collect();
            let line = format!("{:<11} {:<9} {}", report.group, chosen, tried.join(", "));
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}
