//! SMB mappings that break, disconnect, are made by someone else, or meet
//! credentials Windows refuses.

use super::{host_failure, mapping, on_release, path, share, KUBELET};
use csi_proxy_client::api::{FilesystemApi, SmbApi, SmbMapping};
use csi_proxy_client::testing::{FakeHost, ProxyRelease, SmbMappingStatus, WindowsError};

fn host() -> FakeHost {
    FakeHost::builder()
        .smb_share(r"\\srv\data", "u", "p")
        .share_folder(r"\\srv\data\pv1")
        .smb_share(r"\\srv\logs", "admin", "secret")
        .share_folder(r"\\srv\logs\pv")
        .build()
}

/// The Windows code of a failed result, with its standard text checked.
fn windows_code<T: std::fmt::Debug>(result: csi_proxy_client::Result<T>) -> u32 {
    let (_, message, os_code) = host_failure(result);
    let code = u32::try_from(os_code.expect("a Windows code")).unwrap();
    assert_eq!(message, WindowsError::new(code).message());
    code
}

#[tokio::test]
async fn a_disconnected_mapping_is_mapped_over_and_refused() {
    let host = host();
    let link = path(&format!(r"{KUBELET}\data"));
    let data = mapping(r"\\srv\data\pv1", "u", "p");
    host.new_smb_global_mapping(&data.clone().with_local_path(link.clone()))
        .await
        .unwrap();
    assert_eq!(
        host.smb_mapping_status(r"\\SRV\data"),
        Some(SmbMappingStatus::Ok)
    );
    assert!(host.is_symlink(&link).await.unwrap());

    host.set_smb_mapping_status(r"\\srv\data", SmbMappingStatus::Disconnected);
    // Through a broken mapping, IsSymlink fails with Windows' reason.
    assert_eq!(
        windows_code(host.is_symlink(&link).await),
        WindowsError::NETNAME_DELETED
    );
    // The proxy counts it as not mapped and maps over it: the SMB provider
    // refuses with a generic failure (csi-driver-smb #733).
    let refused = host.new_smb_global_mapping(&data).await.unwrap_err();
    assert!(refused.to_string().contains("Generic failure"), "{refused}");
    assert_eq!(
        host.smb_mapping_status(r"\\srv\data"),
        Some(SmbMappingStatus::Disconnected)
    );
    host.remove_smb_global_mapping(&share(r"\\srv\data"))
        .await
        .unwrap();
    host.new_smb_global_mapping(&data).await.unwrap();
    assert!(
        host.is_symlink(&link).await.unwrap(),
        "the link works again"
    );
}

#[tokio::test]
async fn new_mappings_fail_with_the_windows_error_of_each_cause() {
    let host = host();
    let on = &host;
    let smb = |m: SmbMapping| async move { on.new_smb_global_mapping(&m).await };
    let refused = [
        (
            mapping(r"\\srv\data", "u", "wrong"),
            WindowsError::LOGON_FAILURE,
        ),
        (
            mapping(r"\\srv\data", "someone", "p"),
            WindowsError::LOGON_FAILURE,
        ),
        (
            mapping(r"\\nowhere\data", "u", "p"),
            WindowsError::BAD_NETPATH,
        ),
        (mapping(r"\\srv\nope", "u", "p"), WindowsError::BAD_NET_NAME),
    ];
    for (refused, code) in refused {
        assert_eq!(
            windows_code(smb(refused.clone()).await),
            code,
            "{refused:?}"
        );
    }
    assert!(host.smb_mappings().is_empty());

    // Another user's mapping to the same server: a new mapping is refused
    // (1219), whichever share it names.
    host.map_smb_outside(r"\\srv\logs", "admin", "secret");
    assert_eq!(
        host.smb_mapping_user(r"\\srv\logs").as_deref(),
        Some("admin")
    );
    assert_eq!(
        windows_code(smb(mapping(r"\\srv\data", "u", "p")).await),
        WindowsError::SESSION_CREDENTIAL_CONFLICT
    );
    // Not when that mapping is disconnected, nor for the same user.
    host.set_smb_mapping_status(r"\\srv\logs", SmbMappingStatus::Disconnected);
    smb(mapping(r"\\srv\data", "u", "p")).await.unwrap();
    assert_eq!(host.smb_mapping_user(r"\\srv\data").as_deref(), Some("u"));
    host.remove_smb_global_mapping(&share(r"\\srv\logs"))
        .await
        .unwrap();
    assert_eq!(
        windows_code(smb(mapping(r"\\srv\logs", "admin", "secret")).await),
        WindowsError::SESSION_CREDENTIAL_CONFLICT
    );
}

#[tokio::test]
async fn a_usable_mapping_is_reused_whoever_made_it_and_whatever_the_password() {
    let host = host();
    host.map_smb_outside(r"\\SRV\Logs\sub", "admin", "secret");
    assert_eq!(host.smb_mappings(), [r"\\srv\logs"], "keyed by the rule");
    // Another user's credentials are ignored: the mapping is reused.
    let link = path(&format!(r"{KUBELET}\logs"));
    let logs = mapping(r"\\srv\logs\pv", "u", "p").with_local_path(link.clone());
    host.new_smb_global_mapping(&logs).await.unwrap();
    assert_eq!(
        host.smb_mapping_user(r"\\srv\logs").as_deref(),
        Some("admin")
    );
    assert!(host.is_symlink(&link).await.unwrap());

    // On a node of v1.1.1, the remote path itself.
    let old = FakeHost::builder()
        .smb_share(r"\\srv\data", "u", "p")
        .release(ProxyRelease::V1_1_1)
        .build();
    old.map_smb_outside(r"\\srv\data\a\", "u", "p");
    assert_eq!(old.smb_mappings(), [r"\\srv\data\a"]);
}

#[tokio::test]
async fn a_rotated_password_counts_once_the_mapping_is_made_again() {
    let host = host();
    let (old, new) = (
        mapping(r"\\srv\data", "u", "p"),
        mapping(r"\\srv\data", "u", "p2"),
    );
    host.new_smb_global_mapping(&old).await.unwrap();
    host.set_smb_share_password(r"\\SRV\data", "p2");
    // The mapping keeps working, and is reused with either password.
    host.new_smb_global_mapping(&old).await.unwrap();
    host.new_smb_global_mapping(&new).await.unwrap();
    // Once it stops answering, the proxy makes it again: now the old
    // password is refused.
    host.invalidate_smb_mapping(r"\\srv\data");
    assert_eq!(
        windows_code(host.new_smb_global_mapping(&old).await),
        WindowsError::LOGON_FAILURE
    );
    assert!(host.smb_mappings().is_empty(), "removed, not made again");
    host.new_smb_global_mapping(&new).await.unwrap();
}

#[tokio::test]
async fn over_the_wire_smb_refusals_carry_the_windows_text() {
    let host = host();
    let (_node, _fake, proxy) = on_release(&host, ProxyRelease::LATEST).await;
    let smb = proxy.smb().unwrap();
    let (_, message, os_code) = host_failure(
        smb.new_smb_global_mapping(&mapping(r"\\srv\data", "u", "x"))
            .await,
    );
    assert_eq!(message, "The user name or password is incorrect.");
    assert_eq!(os_code, None);
}

#[test]
#[should_panic(expected = "no mapping")]
fn the_status_of_a_mapping_that_is_not_there_cannot_be_set() {
    host().set_smb_mapping_status(r"\\srv\data", SmbMappingStatus::Disconnected);
}

#[test]
#[should_panic(expected = "no share")]
fn a_mapping_outside_needs_a_share_of_the_host() {
    host().map_smb_outside(r"\\srv\other", "admin", "secret");
}
