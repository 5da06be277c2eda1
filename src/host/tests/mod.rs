//! The host backend on a Windows host (Wine, in CI): the conformance
//! suite for the filesystem and system groups, with links through a seam
//! where the host cannot make them, and the working-directory guard; the
//! groups served through WMI against recorded objects (`recorded`, `smb`).

mod disk;
mod iscsi;
mod recorded;
mod smb;
mod stuck;
mod volume;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::filesystem::HostFilesystem;
use super::links::{Entry, Links, OsLinks};
use super::system::HostSystem;
use super::wmi::OsWmi;
use crate::api::{FilesystemApi, SystemApi, WindowsPath};
use crate::capability::Operation;
use crate::testing::conformance::{self, FilesystemFixture, ServiceFixture, SystemFixture};
use crate::working_dirs::KUBELET_DIR;
use crate::Error;

/// Links kept in memory over the host's real files and directories: what
/// the suite's link steps run on where the host makes no links (Wine).
/// Everything else goes to the host.
#[derive(Default)]
pub(super) struct LinksInMemory {
    links: Mutex<BTreeMap<String, Entry>>,
}

/// `ERROR_DIRECTORY`: what `RemoveDirectoryW` answers for a file link.
const ERROR_DIRECTORY: i32 = 267;
/// `ERROR_ACCESS_DENIED`: what `DeleteFileW` answers for a directory link.
const ERROR_ACCESS_DENIED: i32 = 5;

impl LinksInMemory {
    /// A file link at `link` to `target`, as Windows makes one for a file
    /// (the backend itself makes only directory links).
    pub(super) fn make_file_link(&self, target: &Path, link: &Path) {
        let entry = Entry::FileLink(target.to_owned());
        self.links.lock().unwrap().insert(key(link), entry);
    }

    /// Removes the link at `path` if it is `kind`'s; the other kind gets
    /// Windows' error.
    fn remove(&self, path: &Path, is_kind: fn(&Entry) -> bool, else_code: i32) -> io::Result<()> {
        let mut links = self.links.lock().unwrap();
        match links.get(&key(path)) {
            Some(entry) if is_kind(entry) => {
                links.remove(&key(path));
                Ok(())
            }
            Some(_) => Err(io::Error::from_raw_os_error(else_code)),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
}

fn key(path: &Path) -> String {
    path.to_string_lossy().to_lowercase()
}

impl Links for LinksInMemory {
    fn entry(&self, path: &Path) -> io::Result<Entry> {
        match self.links.lock().unwrap().get(&key(path)) {
            Some(entry) => Ok(entry.clone()),
            None => OsLinks.entry(path),
        }
    }

    fn create_dir_link(&self, target: &Path, link: &Path) -> io::Result<()> {
        if self.entry(link)? != Entry::Missing {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        self.links
            .lock()
            .unwrap()
            .insert(key(link), Entry::Link(target.to_owned()));
        Ok(())
    }

    fn remove_dir_link(&self, path: &Path) -> io::Result<()> {
        let is_dir_link = |e: &Entry| matches!(e, Entry::Link(_));
        self.remove(path, is_dir_link, ERROR_DIRECTORY)
    }

    fn remove_file_link(&self, path: &Path) -> io::Result<()> {
        let is_file_link = |e: &Entry| matches!(e, Entry::FileLink(_));
        self.remove(path, is_file_link, ERROR_ACCESS_DENIED)
    }
}

/// The system group over the host's own WMI.
fn system() -> HostSystem {
    HostSystem::new(Arc::new(OsWmi))
}

/// A client whose groups are `backends`, as the host backend is served:
/// each call through its handle, which checks its arguments first.
pub(super) fn through_handles(backends: crate::Backends) -> crate::CsiProxy {
    crate::CsiProxy::served_directly(backends, crate::served_by::ServedBy::Host)
}

/// A fresh, empty directory under the kubelet directory.
pub(super) fn fresh_root(name: &str) -> WindowsPath {
    let root = format!(r"{KUBELET_DIR}\host-{name}-{}", std::process::id());
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    WindowsPath::new(root).unwrap()
}

fn filesystem(links: impl Links) -> HostFilesystem {
    HostFilesystem::new(vec![KUBELET_DIR.to_owned()], links)
}

#[tokio::test]
async fn the_filesystem_group_passes_the_conformance_suite() {
    let root = fresh_root("conformance");
    let fs = filesystem(LinksInMemory::default());
    let fixture = FilesystemFixture { root: root.clone() };
    let report = conformance::filesystem(&fs, &fixture).await.unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 6, "{report:?}");
    // The suite leaves the root empty, on the host's own disk.
    assert_eq!(std::fs::read_dir(root.as_str()).unwrap().count(), 0);
    std::fs::remove_dir(root.as_str()).unwrap();
}

#[tokio::test]
async fn a_file_link_is_removed_as_a_file_and_what_it_leads_to_is_kept() {
    let root = fresh_root("file-links");
    let target = format!(r"{root}\target.txt");
    std::fs::write(&target, "kept").unwrap();
    let link = WindowsPath::new(format!(r"{root}\link.txt")).unwrap();
    // The stand-in refuses to remove a file link as a directory (267), as
    // Windows does.
    let links = LinksInMemory::default();
    links.make_file_link(Path::new(&target), Path::new(link.as_str()));
    let fs = filesystem(links);
    assert!(fs.is_symlink(&link).await.unwrap());
    fs.rmdir(&link, false).await.unwrap();
    assert!(!fs.path_exists(&link).await.unwrap());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn a_link_the_host_did_not_make_is_never_reported_made() {
    let root = fresh_root("links");
    let target = WindowsPath::new(format!(r"{root}\target")).unwrap();
    let link = WindowsPath::new(format!(r"{root}\link")).unwrap();
    let fs = filesystem(OsLinks);
    fs.mkdir(&target).await.unwrap();
    // Wine reports success and creates nothing; Windows makes the link.
    // Either way the answer must be true.
    match fs.create_symlink(&target, &link).await {
        Ok(()) => assert!(fs.is_symlink(&link).await.unwrap()),
        Err(Error::Host { operation, .. }) => {
            assert_eq!(operation, Operation::CreateSymlink);
            assert!(!fs.path_exists(&link).await.unwrap());
        }
        Err(other) => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn a_path_outside_the_working_directories_is_refused_and_left_alone() {
    let outside = WindowsPath::new(format!(r"C:\csi-host-outside-{}", std::process::id())).unwrap();
    let fs = filesystem(OsLinks);
    for result in [
        fs.mkdir(&outside).await,
        fs.rmdir(&outside, true).await,
        fs.rmdir_contents(&outside).await,
    ] {
        match result {
            Err(Error::Host { message, .. }) => {
                assert!(message.contains("working directories"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(!Path::new(outside.as_str()).exists());
}

#[tokio::test]
async fn a_host_failure_carries_the_windows_error_code() {
    let root = fresh_root("codes");
    let missing = WindowsPath::new(format!(r"{root}\missing")).unwrap();
    let fs = filesystem(OsLinks);
    match fs.rmdir(&missing, false).await {
        // ERROR_FILE_NOT_FOUND or ERROR_PATH_NOT_FOUND.
        Err(Error::Host { os_code, .. }) => assert!(matches!(os_code, Some(2 | 3)), "{os_code:?}"),
        other => panic!("{other:?}"),
    }
    match system().get_service("csi-host-no-such-service").await {
        // ERROR_SERVICE_DOES_NOT_EXIST.
        Err(Error::Host { os_code, .. }) => assert_eq!(os_code, Some(1060)),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(root.as_str()).unwrap();
}

#[tokio::test]
async fn an_invalid_service_name_is_refused_before_the_host_is_asked() {
    let system = Arc::new(system());
    let proxy = through_handles(crate::Backends {
        system: Some(system),
        ..crate::Backends::default()
    });
    match proxy.system().unwrap().start_service("").await {
        Err(Error::InvalidArgument { what, .. }) => assert_eq!(what, "service name"),
        other => panic!("{other:?}"),
    }
}

/// The BIOS serial number as Windows' own `wmic` reports it.
fn wmic_bios_serial_number() -> String {
    let out = std::process::Command::new("wmic")
        .args(["bios", "get", "serialnumber"])
        .output()
        .expect("wmic runs");
    // wmic writes UTF-16.
    let wide: Vec<u16> = out
        .stdout
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let text = String::from_utf16_lossy(&wide);
    let mut lines = text
        .lines()
        .map(|l| l.trim_matches(['\u{feff}', ' ', '\r']));
    assert_eq!(lines.next(), Some("SerialNumber"), "{text:?}");
    lines.next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_system_group_passes_the_conformance_suite() {
    // The print spooler: a service every Windows host (and Wine) has,
    // which stops and starts on request.
    system().start_service("Spooler").await.unwrap();
    let fixture = SystemFixture {
        bios_serial_number: wmic_bios_serial_number(),
        service: ServiceFixture {
            name: "Spooler".into(),
            display_name: "Print Spooler".into(),
        },
    };
    let report = conformance::system(&system(), &fixture).await.unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 4, "{report:?}");
}

/// The host's own WMI (Wine's): a method call through the services this
/// backend makes itself, with a `uint32` parameter above 2^31 (the hive's
/// handle), and a failed call's `HRESULT`. Wine's WMI answers a call made
/// semisynchronously at once, with its output: taken as it is.
#[test]
fn method_calls_reach_the_hosts_wmi_through_the_backends_own_services() {
    use super::wmi::{string, unsigned, Limit, Wmi, WmiValue};

    let limit = Limit::within(std::time::Duration::from_secs(60));
    let text = |s: &str| WmiValue::String(s.to_owned());
    let params = vec![
        ("hDefKey", WmiValue::UInt(0x8000_0002)), // HKEY_LOCAL_MACHINE
        (
            "sSubKeyName",
            text(r"Software\Microsoft\Windows NT\CurrentVersion"),
        ),
        ("sValueName", text("CurrentVersion")),
    ];
    let namespace = r"ROOT\CIMV2";
    let output = OsWmi
        .call(
            namespace,
            "StdRegProv",
            "StdRegProv",
            "GetStringValue",
            params,
            &limit,
        )
        .unwrap();
    assert_eq!(
        output.get("ReturnValue").and_then(unsigned),
        Some(0),
        "{output:?}"
    );
    let version = string(&output, "sValue").unwrap_or_default();
    assert!(version.contains('.'), "{output:?}");

    // A method of an object that is not there: WMI's HRESULT.
    let missing = r#"Win32_Service.Name="csi-host-no-such-service""#;
    let failure = OsWmi
        .call(
            namespace,
            "Win32_Service",
            missing,
            "StopService",
            Vec::new(),
            &limit,
        )
        .unwrap_err();
    let hresult = failure.hresult.expect("an HRESULT") as u32;
    assert_eq!(hresult & 0xFFFF_0000, 0x8004_0000, "{failure:?}");
    assert_eq!(failure.os_code(), Some(hresult as i32));
}

/// A query of the host's own WMI (Wine's), made semisynchronously and
/// waited for in slices; one whose caller has left is given up, a
/// timeout of its operation.
#[test]
fn queries_wait_for_the_hosts_wmi_while_their_caller_waits() {
    use super::wmi::{string, wmi_error, Limit, Wmi};

    let namespace = r"ROOT\CIMV2";
    let query = "SELECT Caption FROM Win32_OperatingSystem";
    let (limit, caller_waits) = Limit::while_caller_waits(std::time::Duration::ZERO);
    let found = OsWmi.query(namespace, query, &limit).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(string(&found[0], "Caption").is_some(), "{found:?}");

    drop(caller_waits);
    let failure = OsWmi.query(namespace, query, &limit).unwrap_err();
    assert!(failure.gave_up_after.is_some(), "{failure:?}");
    let error = wmi_error(Operation::GetBiosSerialNumber, failure);
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
}
