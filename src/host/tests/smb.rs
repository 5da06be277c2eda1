//! The SMB group against recorded `MSFT_SmbGlobalMapping` objects, shaped
//! as Microsoft documents the class (`RemotePath`, `LocalPath`, `Status`;
//! methods `Create` and `Remove`): the queries and calls it makes, what it
//! makes of their answers, and the conformance suite over the seam.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use wmi::WMIError;

use super::recorded::{
    failed_with_win32, instance_path, not_found, object, returned, RecordedWmi, Store,
};
use super::{fresh_root, LinksInMemory};
use crate::api::{SmbApi, SmbMapping, SmbRemotePath, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;
use crate::host::links::{Entry, Links};
use crate::host::smb::{HostSmb, CLASS, NAMESPACE};
use crate::host::wmi::{WmiFailure, WmiObject, WmiValue, PATH};
use crate::testing::conformance::{self, SmbFixture};
use crate::working_dirs::KUBELET_DIR;
use crate::{api::Secret, Error};

const USER: &str = "node-user";
const PASSWORD: &str = "correct horse battery staple";
/// What `Create` answers for credentials the server refuses:
/// `ERROR_LOGON_FAILURE`.
const LOGON_FAILURE: u32 = 1326;

/// A recorded mapping of `root` with `status`.
fn mapping(root: &str, status: u32) -> WmiObject {
    object([
        ("LocalPath", WmiValue::String(String::new())),
        ("RemotePath", WmiValue::String(root.to_owned())),
        ("Status", WmiValue::UInt(status.into())),
        (
            PATH,
            WmiValue::String(instance_path(NAMESPACE, CLASS, "RemotePath", root)),
        ),
    ])
}

/// `MSFT_SmbGlobalMapping` on a host whose one server accepts `USER` with
/// `PASSWORD` for any share, with `existing` mappings.
fn smb_wmi(existing: Vec<WmiObject>) -> Arc<RecordedWmi> {
    let create = |store: &mut Store, _target: &str, params: &HashMap<&str, WmiValue>| {
        let Some(WmiValue::String(root)) = params.get("RemotePath") else {
            return Err(WmiFailure::from(WMIError::HResultError {
                hres: 0x8004_1008_u32 as i32, // WBEM_E_INVALID_PARAMETER
            }));
        };
        let expected = format!("{USER}:{PASSWORD}");
        match params.get("Credential") {
            Some(WmiValue::String(c)) if *c == expected => {}
            // A provider that echoes what it was given, as some do.
            given => {
                let said = format!("The user name or password is incorrect: {given:?}");
                return Err(failed_with_win32(LOGON_FAILURE, &said));
            }
        }
        store.add(CLASS, mapping(root, 0));
        Ok(returned(0))
    };
    let remove =
        |store: &mut Store, target: &str, _: &HashMap<&str, WmiValue>| match store.remove(target) {
            true => Ok(returned(0)),
            false => Err(not_found()),
        };
    let wmi = existing
        .into_iter()
        .fold(RecordedWmi::new(NAMESPACE), |wmi, m| {
            wmi.with_object(CLASS, m)
        });
    Arc::new(
        wmi.with_method(CLASS, "Create", Box::new(create))
            .with_method(CLASS, "Remove", Box::new(remove)),
    )
}

/// The group over `wmi`, links in memory, and shares that answer when
/// `answering`.
fn smb(wmi: &Arc<RecordedWmi>, links: &Arc<LinksInMemory>, answering: bool) -> HostSmb {
    HostSmb::new(
        wmi.clone(),
        links.clone(),
        vec![KUBELET_DIR.to_owned()],
        Arc::new(move |_: &Path| answering),
    )
}

fn share(path: &str) -> SmbRemotePath {
    SmbRemotePath::new(path).unwrap()
}

fn request(remote: &str, password: &str) -> SmbMapping {
    SmbMapping::new(share(remote), USER, Secret::new(password))
}

const QUERY: &str =
    r"query SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\files\\share'";

#[tokio::test]
async fn the_smb_group_passes_the_conformance_suite_over_recorded_objects() {
    let root = fresh_root("smb-conformance");
    let wmi = smb_wmi(Vec::new());
    let links = Arc::new(LinksInMemory::default());
    let fixture = SmbFixture {
        share: share(r"\\files\share"),
        username: USER.to_owned(),
        password: Secret::new(PASSWORD),
        local_path: WindowsPath::new(format!(r"{root}\mount")).unwrap(),
    };
    let report = conformance::smb(&smb(&wmi, &links, true), &fixture)
        .await
        .unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 2, "both operations: {report:?}");
    assert!(wmi.objects(CLASS).is_empty());
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn a_new_mapping_maps_the_share_root_and_links_the_full_path() {
    let root = fresh_root("smb-new");
    let wmi = smb_wmi(Vec::new());
    let links = Arc::new(LinksInMemory::default());
    let local = WindowsPath::new(format!(r"{root}\volume")).unwrap();
    let request = request(r"//Files/Share/sub/dir", PASSWORD).with_local_path(local.clone());
    smb(&wmi, &links, true)
        .new_smb_global_mapping(&request)
        .await
        .unwrap();
    assert_eq!(
        wmi.take_log(),
        [
            QUERY.to_owned(),
            format!(
                r#"call {CLASS} Create(RemotePath=String("\\\\files\\share"), RequirePrivacy=Bool(true), Credential=String("{USER}:{PASSWORD}"))"#
            ),
        ]
    );
    assert_eq!(
        links.entry(Path::new(local.as_str())).unwrap(),
        Entry::Link(r"\\Files\Share\sub\dir\".into())
    );
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

/// Maps `\\files\share` with `password` over an existing mapping in
/// `status`, the share answering or not; the recorded WMI, for its log,
/// and the answer.
async fn map_over(status: u32, answering: bool, password: &str) -> (Arc<RecordedWmi>, Result<()>) {
    let wmi = smb_wmi(vec![mapping(r"\\files\share", status)]);
    let links = Arc::new(LinksInMemory::default());
    let answer = smb(&wmi, &links, answering)
        .new_smb_global_mapping(&request(r"\\files\share", password))
        .await;
    (wmi, answer)
}

#[tokio::test]
async fn a_usable_mapping_is_kept_and_a_broken_one_is_left_and_refused() {
    // OK, and the share answers: kept, whatever the credentials.
    let (wmi, answer) = map_over(0, true, "stale").await;
    answer.unwrap();
    assert_eq!(wmi.take_log(), [QUERY]);

    // Disconnected (2), network error (3), unavailable (6), or OK with a
    // share that does not answer (a rotated password): broken. Nothing
    // here tells who made it, so it is neither removed nor made again;
    // the refusal names it, as a name in use (85), which the mounter
    // reads as a stale mapping.
    for (status, answering) in [(2, true), (3, true), (6, true), (0, false)] {
        let (wmi, answer) = map_over(status, answering, PASSWORD).await;
        let error = answer.unwrap_err();
        assert_eq!(
            error.host_cause(),
            Some(crate::HostCause::StaleMapping),
            "{error}"
        );
        assert!(error.to_string().contains(r"\\files\share"), "{error}");
        assert_eq!(wmi.take_log(), [QUERY], "status {status}");
        let kept: Vec<_> = wmi
            .objects(CLASS)
            .iter()
            .map(|m| m["Status"].clone())
            .collect();
        assert_eq!(kept, [WmiValue::UInt(status.into())]);
    }
}

#[tokio::test]
async fn the_look_at_a_share_root_finds_a_mapping_in_any_status() {
    use crate::api::FilesystemApi;
    use crate::host::smb::MappingLook;

    let root = WindowsPath::share_root_of(&share(r"\\Files\Share\sub")).unwrap();
    for status in [0, 2, 4] {
        let wmi = smb_wmi(vec![mapping(r"\\files\share", status)]);
        let fs = super::filesystem(LinksInMemory::default())
            .with_mappings(MappingLook::new(wmi.clone()));
        assert!(!fs.is_symlink(&root).await.unwrap(), "status {status}");
        assert_eq!(wmi.take_log(), [QUERY]);
    }
    // No mapping: the share's root is looked at as any path (here, in
    // memory, it is not there).
    let wmi = smb_wmi(Vec::new());
    let fs =
        super::filesystem(LinksInMemory::default()).with_mappings(MappingLook::new(wmi.clone()));
    assert!(fs.is_symlink(&root).await.is_err());
    assert_eq!(wmi.take_log(), [QUERY]);
}

#[tokio::test]
async fn a_mapping_on_its_way_back_is_left_to_the_pods_that_use_it() {
    // Paused (1), connecting (4), reconnecting (5): never removed under
    // the pods on the share, even while it does not answer yet.
    for recovering in [1, 4, 5] {
        let (wmi, answer) = map_over(recovering, false, PASSWORD).await;
        answer.unwrap();
        assert_eq!(wmi.take_log(), [QUERY], "status {recovering}");
    }
}

#[tokio::test]
async fn failures_carry_their_code_and_never_the_password() {
    let links = Arc::new(LinksInMemory::default());
    let wmi = smb_wmi(Vec::new());
    let group = smb(&wmi, &links, true);
    let refused = group
        .new_smb_global_mapping(&request(r"\\files\share", "a wrong password"))
        .await;
    let cause = refused.as_ref().err().and_then(Error::host_cause);
    assert_eq!(cause, Some(crate::HostCause::LogonFailure), "{refused:?}");
    match refused {
        Err(Error::Host {
            operation,
            message,
            os_code,
            ..
        }) => {
            assert_eq!(operation, Operation::NewSmbGlobalMapping);
            // The code from the provider's error object, behind WBEM_E_FAILED.
            assert_eq!(os_code, Some(LOGON_FAILURE as i32));
            assert!(message.contains("password is incorrect"), "{message}");
            assert!(!message.contains("wrong"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(wmi.objects(CLASS).is_empty());

    // A failure of WMI itself: its HRESULT.
    let broken = Arc::new(RecordedWmi::new(NAMESPACE));
    match smb(&broken, &links, true)
        .new_smb_global_mapping(&request(r"\\files\share", PASSWORD))
        .await
    {
        Err(Error::Host {
            message, os_code, ..
        }) => {
            assert_eq!(os_code, Some(0x8004_1055_u32 as i32), "{message}");
            assert!(!message.contains(PASSWORD), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn removing_a_mapping_that_is_not_there_calls_nothing() {
    let links = Arc::new(LinksInMemory::default());
    let wmi = smb_wmi(Vec::new());
    match smb(&wmi, &links, true)
        .remove_smb_global_mapping(&share(r"\\files\share\sub"))
        .await
    {
        Err(Error::Host { operation, .. }) => {
            assert_eq!(operation, Operation::RemoveSmbGlobalMapping)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(wmi.take_log(), [QUERY]);
}

#[tokio::test]
async fn a_local_path_outside_the_working_directories_gets_no_link() {
    let links = Arc::new(LinksInMemory::default());
    let wmi = smb_wmi(Vec::new());
    let outside = WindowsPath::new(r"C:\Windows\csi-smb-link").unwrap();
    let request = request(r"\\files\share", PASSWORD).with_local_path(outside.clone());
    match smb(&wmi, &links, true)
        .new_smb_global_mapping(&request)
        .await
    {
        Err(Error::Host { message, .. }) => {
            assert!(message.contains("working directories"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Refused before anything was asked of WMI: no mapping either.
    assert!(wmi.take_log().is_empty());
    assert!(wmi.objects(CLASS).is_empty());
    assert_eq!(
        links.entry(Path::new(outside.as_str())).unwrap(),
        Entry::Missing
    );
}

#[tokio::test]
async fn a_blank_user_name_is_refused_before_any_request() {
    let links = Arc::new(LinksInMemory::default());
    let wmi = smb_wmi(Vec::new());
    let anonymous = SmbMapping::new(share(r"\\files\share"), " ", Secret::new(PASSWORD));
    let proxy = super::through_handles(crate::Backends {
        smb: Some(Arc::new(smb(&wmi, &links, true))),
        ..crate::Backends::default()
    });
    match proxy
        .smb()
        .unwrap()
        .new_smb_global_mapping(&anonymous)
        .await
    {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(wmi.take_log().is_empty());
}
