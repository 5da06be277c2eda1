//! How the fake proxy reads each request field and writes each answer
//! field, by the kind the catalogue names (the client writes and reads
//! the same kinds: `crate::adapter::fields`). It refuses what CSI Proxy
//! refuses, as it does: a status with code `Unknown`, in Go's words where
//! a test depends on them. The kinds of one group alone are read and
//! written in its server's module.

use tonic::Status;

use crate::adapter::fields::{
    Bytes, DecimalDisk, Each, Iqn, LegacyError, LookedPath, PartitionNumber, PathText, ServiceName,
    ShareText, VolumeText, WideDisk,
};
use crate::api::{check_name, quoted, SmbRemotePath, VolumeId, WindowsPath};

/// A request field, read into the argument the backend is called with.
pub(super) trait ReadRequest {
    /// The argument, owned (the backend borrows it).
    type Owned;
    /// The field as the generated message has it.
    type Wire;

    /// The argument in the field, or the status CSI Proxy answers for it.
    fn from_request(wire: Self::Wire) -> Result<Self::Owned, Status>;
}

/// An answer field, written of (part of) what the backend answered.
pub(super) trait WriteAnswer {
    /// The value as the API has it.
    type Value;
    /// The field as the generated message has it.
    type Wire;

    /// The field the fake proxy sends for `value`.
    fn to_answer(value: Self::Value) -> Self::Wire;
}

/// The status CSI Proxy answers for a request field it cannot use: a Go
/// error, code `Unknown`.
pub(super) fn refused(message: impl Into<String>) -> Status {
    Status::new(tonic::Code::Unknown, message.into())
}

/// A name the argument checks refuse (empty, control characters) is
/// refused with the same words.
fn name(what: &'static str, wire: String) -> Result<String, Status> {
    check_name(what, &wire).map_err(|e| refused(e.to_string()))?;
    Ok(wire)
}

impl ReadRequest for Iqn {
    type Owned = String;
    type Wire = String;

    fn from_request(wire: String) -> Result<String, Status> {
        name("IQN", wire)
    }
}

impl ReadRequest for ServiceName {
    type Owned = String;
    type Wire = String;

    fn from_request(wire: String) -> Result<String, Status> {
        name("service name", wire)
    }
}

/// A disk's page 0x83 identifier: v1alpha1's `GetDiskNumberByName`, which
/// both sides carry by hand (the client sends it as it is).
pub(super) struct DiskName;

impl ReadRequest for DiskName {
    type Owned = String;
    type Wire = String;

    fn from_request(wire: String) -> Result<String, Status> {
        name("disk name", wire)
    }
}

/// The proxy does not normalize: a path that is not already a normalized
/// local path is refused.
impl ReadRequest for PathText {
    type Owned = WindowsPath;
    type Wire = String;

    fn from_request(wire: String) -> Result<WindowsPath, Status> {
        match WindowsPath::new(&wire) {
            Ok(path) if path.as_str() == wire => Ok(path),
            Ok(_) => Err(refused(format!(
                "path {} is not a valid Windows path",
                quoted(&wire)
            ))),
            Err(e) => Err(refused(e.to_string())),
        }
    }
}

/// `IsSymlink`, which CSI Proxy does not check: a local path as
/// [`PathText`] reads it, or a share's root as the SDK writes it
/// (`\\server\share\`, lower-cased). Any other UNC path is refused,
/// where the proxy would look at it: the fake is not kinder for it.
impl ReadRequest for LookedPath {
    type Owned = WindowsPath;
    type Wire = String;

    fn from_request(wire: String) -> Result<WindowsPath, Status> {
        if !wire.starts_with("\\\\") {
            return PathText::from_request(wire);
        }
        let root = SmbRemotePath::new(&wire)
            .ok()
            .and_then(|share| WindowsPath::share_root_of(&share));
        match root {
            Some(root) if root.as_str() == wire => Ok(root),
            _ => Err(refused(format!(
                "path {} is not a share's root",
                quoted(&wire)
            ))),
        }
    }
}

/// Read back with the value's own check, refusing what it refuses.
impl ReadRequest for VolumeText {
    type Owned = VolumeId;
    type Wire = String;

    fn from_request(wire: String) -> Result<VolumeId, Status> {
        VolumeId::new(wire).map_err(|e| refused(e.to_string()))
    }
}

impl WriteAnswer for VolumeText {
    type Value = VolumeId;
    type Wire = String;

    fn to_answer(value: VolumeId) -> String {
        value.to_string()
    }
}

/// Read back with the value's own check, refusing what it refuses.
impl ReadRequest for ShareText {
    type Owned = SmbRemotePath;
    type Wire = String;

    fn from_request(wire: String) -> Result<SmbRemotePath, Status> {
        SmbRemotePath::new(wire).map_err(|e| refused(e.to_string()))
    }
}

/// Parsed as the proxy parses it.
impl ReadRequest for DecimalDisk {
    type Owned = u32;
    type Wire = String;

    fn from_request(wire: String) -> Result<u32, Status> {
        wire.parse().map_err(|_| {
            refused(format!(
                "strconv.ParseUint: parsing {wire:?}: invalid syntax"
            ))
        })
    }
}

impl WriteAnswer for DecimalDisk {
    type Value = u32;
    type Wire = String;

    fn to_answer(value: u32) -> String {
        value.to_string()
    }
}

impl<K: WriteAnswer> WriteAnswer for Each<K> {
    type Value = Vec<K::Value>;
    type Wire = Vec<K::Wire>;

    fn to_answer(value: Self::Value) -> Self::Wire {
        value.into_iter().map(K::to_answer).collect()
    }
}

impl WriteAnswer for WideDisk {
    type Value = u32;
    type Wire = i64;

    fn to_answer(value: u32) -> i64 {
        i64::from(value)
    }
}

impl ReadRequest for Bytes {
    type Owned = u64;
    type Wire = i64;

    fn from_request(wire: i64) -> Result<u64, Status> {
        u64::try_from(wire).map_err(|_| refused(format!("invalid size {wire}")))
    }
}

/// More than the wire can carry is sent as the most it can.
impl WriteAnswer for Bytes {
    type Value = u64;
    type Wire = i64;

    fn to_answer(value: u64) -> i64 {
        i64::try_from(value).unwrap_or(i64::MAX)
    }
}

impl ReadRequest for PartitionNumber {
    type Owned = Option<u32>;
    type Wire = u32;

    fn from_request(wire: u32) -> Result<Option<u32>, Status> {
        Ok(Some(wire).filter(|&p| p != 0))
    }
}

/// Left empty, as CSI Proxy does from v1.0: failures are gRPC statuses.
impl WriteAnswer for LegacyError {
    type Value = ();
    type Wire = String;

    fn to_answer((): ()) -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_is_symlink_reads_a_share_root_and_only_as_the_sdk_writes_it() {
        let root = LookedPath::from_request(r"\\srv\data\".to_owned()).unwrap();
        assert_eq!(root.as_str(), r"\\srv\data\");
        let local = LookedPath::from_request(r"C:\var\lib\kubelet".to_owned()).unwrap();
        assert_eq!(local.as_str(), r"C:\var\lib\kubelet");
        for refused in [r"\\srv\data", r"\\SRV\data\", r"\\srv\data\pv", r"\\?\C:\x"] {
            assert!(
                LookedPath::from_request(refused.to_owned()).is_err(),
                "{refused}"
            );
        }
        assert!(PathText::from_request(r"\\srv\data\".to_owned()).is_err());
    }
}
