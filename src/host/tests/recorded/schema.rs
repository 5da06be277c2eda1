//! The classes' declared types, as Microsoft documents them: the
//! properties a recorded object must hold as the seam reads them, and the
//! parameters each method takes, so that the stand-in is no kinder than
//! Windows.

use wmi::WMIError;

use super::{object, Store, WBEM_E_INVALID_METHOD, WBEM_E_INVALID_PARAMETER, WBEM_E_TYPE_MISMATCH};
use crate::host::wmi::{WmiFailure, WmiObject, WmiValue};

/// A parameter's CIM type, as its class declares it.
#[derive(Clone, Copy, Debug)]
enum Cim {
    Boolean,
    String,
    UInt16,
    /// A character: as a parameter, a number; read, a one-letter string.
    Char16,
    UInt32,
    /// Given as decimal text, as WMI maps it.
    UInt64,
    /// `uint16[]`: an array of numbers.
    UInt16Array,
    /// `string[]`.
    TextArray,
}

use Cim::{Boolean, Char16, String as Text, TextArray, UInt16, UInt16Array, UInt32, UInt64};

/// The properties the groups read, typed as Microsoft documents each
/// class: a recorded object must hold them as the backend's seam gives
/// them (the `wmi` crate reads each by its type: a `uint64`, which WMI
/// sends as text, as a number; a `char16` as a one-letter string; a
/// `uint16[]` as an array, empty for none; a missing value as null), so
/// that no test passes on a kinder shape than Windows'.
const PROPERTIES: &[(&str, Declared)] = &[
    (
        "MSFT_Disk",
        &[
            ("Number", UInt32),
            ("Location", Text),
            ("Path", Text),
            ("SerialNumber", Text),
            ("UniqueId", Text),
            ("Size", UInt64),
            ("AllocatedSize", UInt64),
            ("IsOffline", Boolean),
            ("IsReadOnly", Boolean),
            ("PartitionStyle", UInt16),
            ("OperationalStatus", UInt16Array),
        ],
    ),
    (
        "MSFT_Partition",
        &[
            ("DiskNumber", UInt32),
            ("PartitionNumber", UInt32),
            ("Size", UInt64),
            ("Offset", UInt64),
            ("DriveLetter", Char16),
            ("GptType", Text),
            ("AccessPaths", TextArray),
            ("IsOffline", Boolean),
        ],
    ),
    (
        "MSFT_Volume",
        &[
            ("UniqueId", Text),
            ("FileSystemType", UInt16),
            ("FileSystem", Text),
            ("Size", UInt64),
            ("SizeRemaining", UInt64),
            ("DriveLetter", Char16),
            ("OperationalStatus", UInt16Array),
        ],
    ),
    (
        "MSFT_iSCSITargetPortal",
        &[
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("IsHeaderDigest", Boolean),
            ("IsDataDigest", Boolean),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        &[
            ("NodeAddress", Text),
            ("IsConnected", Boolean),
            ("IsDiscovered", Boolean),
        ],
    ),
    (
        "MSFT_iSCSISession",
        &[
            ("SessionIdentifier", Text),
            ("IsPersistent", Boolean),
            ("IsConnected", Boolean),
        ],
    ),
    ("MSFT_iSCSIConnection", &[("ConnectionIdentifier", Text)]),
    (
        "MSFT_SmbGlobalMapping",
        &[
            ("RemotePath", Text),
            ("LocalPath", Text),
            ("Status", UInt32),
        ],
    ),
];

/// Panics, naming it, at a property of `object` that is not typed as
/// `class` declares it: a defect of the test that recorded it.
pub(super) fn check_recorded(class: &str, object: &WmiObject) {
    let declared = PROPERTIES.iter().find(|(c, _)| *c == class);
    for (name, value) in object {
        let cim = declared.and_then(|(_, props)| props.iter().find(|(n, _)| n == name));
        if let Some((_, cim)) = cim {
            assert!(
                is_read_as(value, *cim),
                "recorded {class}.{name} is {value:?}: the seam reads a {cim:?} otherwise"
            );
        }
    }
}

/// A method's input parameters and their types.
type Declared = &'static [(&'static str, Cim)];

/// The input parameters of the methods the groups call, as Microsoft
/// documents each class: the stand-in refuses a parameter a method does
/// not have, or one of another type, as WMI does, and a method it does not
/// know.
const PARAMETERS: &[(&str, &str, Declared)] = &[
    ("MSFT_Disk", "Initialize", &[("PartitionStyle", UInt16)]),
    (
        "MSFT_Disk",
        "CreatePartition",
        &[
            ("Size", UInt64),
            ("UseMaximumSize", Boolean),
            ("Offset", UInt64),
            ("Alignment", UInt32),
            ("DriveLetter", Char16),
            ("AssignDriveLetter", Boolean),
            ("MbrType", UInt16),
            ("GptType", Text),
            ("IsHidden", Boolean),
            ("IsActive", Boolean),
        ],
    ),
    ("MSFT_Disk", "Refresh", &[]),
    ("MSFT_Disk", "Online", &[]),
    ("MSFT_Disk", "Offline", &[]),
    ("MSFT_Partition", "Online", &[]),
    ("MSFT_Partition", "GetSupportedSize", &[]),
    ("MSFT_Partition", "Resize", &[("Size", UInt64)]),
    ("MSFT_StorageSetting", "UpdateHostStorageCache", &[]),
    (
        "MSFT_Volume",
        "Format",
        &[
            ("FileSystem", Text),
            ("FileSystemLabel", Text),
            ("AllocationUnitSize", UInt32),
            ("Full", Boolean),
            ("Force", Boolean),
            ("Compress", Boolean),
            ("ShortFileNameSupport", Boolean),
            ("SetIntegrityStreams", Boolean),
            ("UseLargeFRS", Boolean),
            ("DisableHeatGathering", Boolean),
        ],
    ),
    ("MSFT_Volume", "Flush", &[]),
    (
        "MSFT_iSCSITargetPortal",
        "New",
        &[
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("InitiatorInstanceName", Text),
            ("InitiatorPortalAddress", Text),
            ("AuthenticationType", Text),
            ("ChapUsername", Text),
            ("ChapSecret", Text),
            ("IsHeaderDigest", Boolean),
            ("IsDataDigest", Boolean),
        ],
    ),
    (
        "MSFT_iSCSITargetPortal",
        "Remove",
        &[
            ("InitiatorInstanceName", Text),
            ("InitiatorPortalAddress", Text),
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        "Connect",
        &[
            ("NodeAddress", Text),
            ("TargetPortalAddress", Text),
            ("TargetPortalPortNumber", UInt16),
            ("InitiatorPortalAddress", Text),
            ("IsDataDigest", Boolean),
            ("IsHeaderDigest", Boolean),
            ("IsPersistent", Boolean),
            ("ReportToPnP", Boolean),
            ("AuthenticationType", Text),
            ("IsMultipathEnabled", Boolean),
            ("InitiatorInstanceName", Text),
            ("ChapUsername", Text),
            ("ChapSecret", Text),
        ],
    ),
    (
        "MSFT_iSCSITarget",
        "Disconnect",
        &[("SessionIdentifier", Text)],
    ),
    ("MSFT_iSCSISession", "Unregister", &[]),
    (
        "MSFT_iSCSISession",
        "SetCHAPSecret",
        &[("ChapSecret", Text)],
    ),
    (
        "MSFT_SmbGlobalMapping",
        "Create",
        &[
            ("RemotePath", Text),
            ("Credential", Text),
            ("RequirePrivacy", Boolean),
            ("RequireIntegrity", Boolean),
            ("UseWriteThrough", Boolean),
        ],
    ),
    ("MSFT_SmbGlobalMapping", "Remove", &[("Force", Boolean)]),
];

/// Whether `value` is what the seam gives for a property of type `cim`.
fn is_read_as(value: &WmiValue, cim: Cim) -> bool {
    let fits = |max: u64| matches!(value, WmiValue::UInt(v) if *v <= max);
    match (cim, value) {
        (UInt16Array, WmiValue::Array(items)) => items.iter().all(|i| is_read_as(i, UInt16)),
        (TextArray, WmiValue::Array(items)) => items.iter().all(|i| is_read_as(i, Text)),
        (UInt16Array | TextArray, _) => false,
        (_, WmiValue::Null) => true,
        (Boolean, v) => matches!(v, WmiValue::Bool(_)),
        (Text, v) => matches!(v, WmiValue::String(_)),
        (Char16, WmiValue::String(c)) => c.chars().count() == 1,
        (Char16, _) => false,
        (UInt16, _) => fits(u16::MAX.into()),
        (UInt32, _) => fits(u32::MAX.into()),
        (UInt64, _) => fits(u64::MAX),
    }
}

/// Whether `value` is what WMI takes for a parameter of type `cim`.
fn is_of(value: &WmiValue, cim: Cim) -> bool {
    let fits = |max: u64| crate::host::wmi::unsigned(value).is_some_and(|v| v <= max);
    match (cim, value) {
        (_, WmiValue::Null) => true,
        (Boolean, v) => matches!(v, WmiValue::Bool(_)),
        (Text, v) => matches!(v, WmiValue::String(_)),
        (UInt16 | Char16, _) => fits(u16::MAX.into()),
        (UInt32, _) => fits(u32::MAX.into()),
        (UInt64, WmiValue::String(text)) => text.parse::<u64>().is_ok(),
        (UInt64, _) => false,
        (UInt16Array, WmiValue::Array(items)) => items.iter().all(|i| is_of(i, UInt16)),
        (TextArray, WmiValue::Array(items)) => items.iter().all(|i| is_of(i, Text)),
        (UInt16Array | TextArray, _) => false,
    }
}

/// The failure WMI answers for `params` of `class.method`, if any.
pub(super) fn check_params(
    class: &str,
    method: &str,
    params: &[(&str, WmiValue)],
) -> Result<(), WmiFailure> {
    let hresult = |hres| Err(WmiFailure::from(WMIError::HResultError { hres }));
    let Some((_, _, declared)) = PARAMETERS
        .iter()
        .find(|(c, m, _)| *c == class && *m == method)
    else {
        return hresult(WBEM_E_INVALID_METHOD);
    };
    for (name, value) in params {
        match declared.iter().find(|(n, _)| n == name) {
            None => return hresult(WBEM_E_INVALID_PARAMETER),
            Some((_, cim)) if !is_of(value, *cim) => return hresult(WBEM_E_TYPE_MISMATCH),
            Some(_) => {}
        }
    }
    Ok(())
}

#[test]
#[should_panic(expected = "recorded MSFT_Volume.Size is String(\"1024\")")]
fn an_object_typed_otherwise_than_the_seam_reads_it_is_refused() {
    // A `uint64` as text, as WMI sends it: the seam reads it as a number.
    let raw = object([("Size", WmiValue::String("1024".into()))]);
    Store::default().add("MSFT_Volume", raw);
}

#[test]
#[should_panic(expected = "recorded MSFT_Disk.OperationalStatus is Null")]
fn a_null_array_is_refused_as_the_seam_reads_it_empty() {
    let raw = object([("OperationalStatus", WmiValue::Null)]);
    Store::default().add("MSFT_Disk", raw);
}

#[test]
fn parameters_are_held_to_their_declared_types() {
    let class = "MSFT_Partition";
    let sized = |size| vec![("Size", size)];
    assert!(check_params(class, "Resize", &sized(WmiValue::uint64(1 << 30))).is_ok());
    for (params, code) in [
        (sized(WmiValue::UInt(1 << 30)), WBEM_E_TYPE_MISMATCH),
        (
            vec![("Bytes", WmiValue::uint64(1))],
            WBEM_E_INVALID_PARAMETER,
        ),
    ] {
        let refused = check_params(class, "Resize", &params).unwrap_err();
        assert_eq!(refused.hresult, Some(code), "{params:?}");
    }
    let unknown = check_params(class, "Shrink", &[]).unwrap_err();
    assert_eq!(unknown.hresult, Some(WBEM_E_INVALID_METHOD));
}
