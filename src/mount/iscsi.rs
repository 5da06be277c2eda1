//! iSCSI volumes: a target's disk staged like any other, with the target
//! logged in to while any volume staged from it is, and out of when the
//! last one is unstaged (if this mounter logged in).
//!
//! The session is leased as an SMB mapping is: each volume staged from a
//! target records a lease (before the login, so that a crash leaks
//! nothing), and the last lease's unstage logs out. The journal keeps the
//! leases across restarts; `reconcile` drops those of volumes that are
//! gone.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::flight::Flights;
use super::journal::Journal;
use super::journal::TargetRecord;
use super::{check_volume, Change, DiskAfterUnstage, DiskSelector, Mounter, Settings, Staged};
use crate::api::{IscsiAuth, Secret, TargetPortal, WindowsPath};
use crate::client::CsiProxy;
use crate::error::{Error, Result};

/// An iSCSI target's disk: where the target is, its IQN, how to log in,
/// and which of its LUNs (when it has several).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IscsiVolume {
    portal: TargetPortal,
    iqn: String,
    auth: IscsiAuth,
    initiator_secret: Option<Secret>,
    lun: Option<u32>,
}

impl IscsiVolume {
    /// The disk of target `iqn` at `portal`, logged in to without CHAP.
    pub fn new(portal: TargetPortal, iqn: impl Into<String>) -> Self {
        Self {
            portal,
            iqn: iqn.into(),
            auth: IscsiAuth::None,
            initiator_secret: None,
            lun: None,
        }
    }

    /// Logs in with `auth` (one-way or mutual CHAP).
    pub fn with_auth(mut self, auth: IscsiAuth) -> Self {
        self.auth = auth;
        self
    }

    /// The initiator's own secret, which mutual CHAP needs: set on the
    /// node (`SetMutualChapSecret`) before the login.
    pub fn with_initiator_secret(mut self, secret: Secret) -> Self {
        self.initiator_secret = Some(secret);
        self
    }

    /// The target's disk at logical unit `lun`, for a target with several.
    pub fn with_lun(mut self, lun: u32) -> Self {
        self.lun = Some(lun);
        self
    }

    /// The target's portal.
    pub fn portal(&self) -> &TargetPortal {
        &self.portal
    }

    /// The target's IQN.
    pub fn iqn(&self) -> &str {
        &self.iqn
    }

    fn validate(&self) -> Result<()> {
        self.portal.validate()?;
        crate::api::check_name("target IQN", &self.iqn)?;
        self.auth.validate()
    }

    /// The target's key in the journal: portal and IQN, without case.
    fn target_key(&self) -> String {
        target_key(&self.portal, &self.iqn)
    }

    /// The stage's disk selector: its text is what the journal records.
    pub(super) fn selector(&self, disks: Vec<u32>) -> DiskSelector {
        let lun = self.lun;
        let mut description = format!(
            "disk of iSCSI target {} at {}:{}",
            self.iqn, self.portal.address, self.portal.port
        );
        if let Some(lun) = lun {
            description.push_str(&format!(", LUN {lun}"));
        }
        DiskSelector::matching(description, move |candidate| {
            let at_lun = match (lun, &candidate.location) {
                (None, _) => true,
                (Some(lun), Some(location)) => location.lun_id.trim() == lun.to_string(),
                (Some(_), None) => false,
            };
            disks.contains(&candidate.number) && at_lun
        })
    }
}

fn target_key(portal: &TargetPortal, iqn: &str) -> String {
    format!("{}:{} {}", portal.address, portal.port, iqn).to_lowercase()
}

impl Mounter {
    /// `NodeStageVolume` of an iSCSI volume: registers the target's portal,
    /// logs in to the target (with CHAP when `target` says so) unless this
    /// mounter is logged in already, waits for the target's disk and
    /// stages it as [`stage_disk`](Self::stage_disk) does, for `volume`
    /// (the CSI volume ID), which takes a lease on the session.
    ///
    /// - The lease is recorded before the login: a crash in between leaks
    ///   no session; the last unstage, or `reconcile`, logs out.
    /// - A session found in place at the first stage (someone else logged
    ///   in) is used and never logged out of.
    /// - A target with several disks needs [`IscsiVolume::with_lun`];
    ///   without it, they are [`Error::Ambiguous`].
    /// - No disk within the mounter's disk wait: [`Error::NotFound`].
    pub async fn stage_iscsi(
        &self,
        volume: &str,
        target: &IscsiVolume,
        staging: &WindowsPath,
    ) -> Result<Staged> {
        check_volume(volume)?;
        target.validate()?;
        let request = format!(
            "stage-iscsi {volume} {} {:?}",
            target.target_key(),
            target.lun
        );
        let (volume, target, path) = (volume.to_owned(), target.clone(), staging.clone());
        self.in_flight(staging.as_str(), request, |inner| async move {
            // Inside the flight: a call that ran before changed the records.
            inner.paths.check_staged_for(&volume, &path)?;
            inner.stage_iscsi(&volume, &target, &path).await
        })
        .await
    }

    /// `NodeUnstageVolume` of an iSCSI volume: unstages its disk as
    /// [`unstage_disk`](Self::unstage_disk) does, then drops `volume`'s
    /// lease taken for `staging`; the last lease of a target this mounter
    /// logged in to logs out (the target's disks go with the session). A
    /// lease held for another path is kept, and the session with it. A
    /// logout that fails keeps the lease, so that the retry logs out.
    pub async fn unstage_iscsi(
        &self,
        volume: &str,
        staging: &WindowsPath,
        disk: DiskAfterUnstage,
    ) -> Result<Change> {
        check_volume(volume)?;
        let request = format!("unstage-iscsi {volume} offline={}", disk.offline());
        let (volume, path) = (volume.to_owned(), staging.clone());
        self.in_flight(staging.as_str(), request, |inner| async move {
            inner.paths.check_staged_for(&volume, &path)?;
            inner.unstage_iscsi(&volume, &path, disk.offline()).await
        })
        .await
    }
}

/// The iSCSI targets' sessions: logged in to under a volume's lease,
/// recorded first, and out of with the last lease of a target this
/// mounter logged in to.
pub(super) struct Targets {
    proxy: CsiProxy,
    journal: Arc<Journal>,
    /// One login or logout per target at a time.
    flights: Arc<Flights>,
    settings: Arc<Settings>,
}

impl Targets {
    /// The targets of `proxy`, leased in `journal`, each locked in
    /// `flights` while logged in to or out of.
    pub(super) fn new(
        proxy: CsiProxy,
        journal: Arc<Journal>,
        flights: Arc<Flights>,
        settings: Arc<Settings>,
    ) -> Self {
        Self {
            proxy,
            journal,
            flights,
            settings,
        }
    }

    /// Records `volume`'s lease on the target, then logs in unless the
    /// target's session is there already (one login per target at a
    /// time).
    pub(super) async fn log_in(
        &self,
        volume: &str,
        target: &IscsiVolume,
        staging: &WindowsPath,
    ) -> Result<()> {
        let target_key = target.target_key();
        let _target = self.flights.lock(&format!("iscsi {target_key}")).await;
        let iscsi = self.proxy.iscsi()?;
        let recorded = self
            .journal
            .view(|records| records.targets.contains_key(&target_key));
        // A session with disks is logged in already (a repeat, another
        // LUN of the target, or someone else's: found so before this
        // mounter ever logged in), and is not logged in to again.
        let listed = iscsi.get_target_disks(&target.portal, &target.iqn).await;
        let logged_in_already = matches!(listed, Ok(disks) if !disks.is_empty());
        let foreign = !recorded && logged_in_already;
        let record = TargetRecord {
            portal: target.portal.clone(),
            iqn: target.iqn.clone(),
            ours: !foreign,
        };
        let had_lease = self
            .journal
            .update(|records| {
                if !records.targets.contains_key(&target_key) {
                    records.targets.insert(target_key.clone(), record);
                }
                let lease = (target_key.clone(), volume.to_owned());
                records
                    .target_leases
                    .insert(lease, staging.clone())
                    .is_some()
            })
            .await?;
        if logged_in_already {
            return Ok(());
        }
        let logged_in = async {
            iscsi.add_target_portal(&target.portal).await?;
            if let Some(secret) = &target.initiator_secret {
                iscsi.set_mutual_chap_secret(secret).await?;
            }
            iscsi
                .connect_target(&target.portal, &target.iqn, &target.auth)
                .await
        };
        let error = match logged_in.await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        // Refused (a wrong secret, an unknown target): nothing is logged
        // in, and the lease this call took goes again. An answer lost
        // keeps it, for the retry or reconcile.
        if !error.may_have_run() && !had_lease {
            self.journal
                .update(|records| {
                    let lease = (target_key.clone(), volume.to_owned());
                    records.target_leases.remove(&lease);
                    if !recorded && records.target_leases_of(&target_key).next().is_none() {
                        records.targets.remove(&target_key);
                    }
                })
                .await?;
        }
        Err(error)
    }

    /// The target's disks, waited for (Windows lists them a moment after
    /// the login) for the mounter's disk wait.
    pub(super) async fn target_disks(&self, target: &IscsiVolume) -> Result<Vec<u32>> {
        let iscsi = self.proxy.iscsi()?;
        let deadline = Instant::now() + self.settings.disk_wait;
        loop {
            let disks = iscsi.get_target_disks(&target.portal, &target.iqn).await?;
            if !disks.is_empty() {
                return Ok(disks);
            }
            if Instant::now() >= deadline {
                return Err(Error::NotFound {
                    what: format!(
                        "disk of iSCSI target {} at {} (logged in, none listed after {:?})",
                        target.iqn, target.portal.address, self.settings.disk_wait
                    ),
                });
            }
            let pause = self.settings.poll_interval.min(Duration::from_secs(1));
            tokio::time::sleep(pause).await;
        }
    }

    /// Drops `volume`'s lease on the target; the last lease of a target
    /// this mounter logged in to logs out first. Whether it logged out.
    pub(super) async fn release_target(
        &self,
        target_key: &str,
        record: &TargetRecord,
        volume: &str,
    ) -> Result<bool> {
        let _target = self.flights.lock(&format!("iscsi {target_key}")).await;
        let last = self.journal.view(|records| {
            !(records.target_leases_of(target_key)).any(|(holder, _)| holder != volume)
        });
        let log_out = last && record.ours;
        if log_out {
            let iscsi = self.proxy.iscsi()?;
            if let Err(error) = iscsi.disconnect_target(&record.portal, &record.iqn).await {
                // Logged out already (a crash after the logout, before its
                // record): the target lists no disk. Anything else stays
                // an error, and the lease with it, for the retry.
                let disks = iscsi.get_target_disks(&record.portal, &record.iqn).await;
                if !matches!(disks, Ok(disks) if disks.is_empty()) {
                    return Err(error);
                }
            }
        }
        self.journal
            .update(|records| {
                records
                    .target_leases
                    .remove(&(target_key.to_owned(), volume.to_owned()));
                if last {
                    records.targets.remove(target_key);
                }
            })
            .await?;
        Ok(log_out)
    }
}
