//! How a value of the API travels in one field of a message, as the
//! client writes a request and reads an answer. The catalogue
//! (`catalogue/<group>.rs`) names a field kind per field
//! (`field: Kind(argument)`); the fake proxy reads and writes each kind by
//! the same rule (`crate::testing::fake_proxy::fields`, with `testing`). A
//! field named without a kind travels as it is.
//!
//! The client refuses what a proxy should not have sent
//! ([`Error::InvalidResponse`](crate::Error::InvalidResponse)).

use super::convert::{byte_count, disk_number, disk_number_from_i64, volume_id, wire_bytes};
use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;

/// A field of a request, made of one argument of a trait method.
pub(crate) trait RequestField {
    /// The argument as a trait method takes it.
    type Arg<'a>;
    /// The field as the generated message has it.
    type Wire;

    /// The field the client sends for `arg`.
    fn to_request(arg: Self::Arg<'_>) -> Result<Self::Wire>;
}

/// A field of an answer, which is (part of) what a trait method returns.
pub(crate) trait AnswerField {
    /// The value as the API has it.
    type Value;
    /// The field as the generated message has it.
    type Wire;

    /// The value the client reads from the field `field` of `operation`'s
    /// answer.
    fn from_answer(
        operation: Operation,
        field: &'static str,
        wire: Self::Wire,
    ) -> Result<Self::Value>;
}

/// An iSCSI target's IQN, as it is (the fake proxy refuses one empty or
/// with control characters, as the argument checks do).
pub(crate) struct Iqn;

impl RequestField for Iqn {
    type Arg<'a> = &'a str;
    type Wire = String;

    fn to_request(arg: &str) -> Result<String> {
        Ok(arg.to_owned())
    }
}

/// A Windows service's name, as it is (refused like an IQN).
pub(crate) struct ServiceName;

impl RequestField for ServiceName {
    type Arg<'a> = &'a str;
    type Wire = String;

    fn to_request(arg: &str) -> Result<String> {
        Ok(arg.to_owned())
    }
}

/// A value sent as its text (`Display`): a path, a volume ID, a share.
pub(crate) struct Text<T>(std::marker::PhantomData<T>);

impl<T: std::fmt::Display + 'static> RequestField for Text<T> {
    type Arg<'a> = &'a T;
    type Wire = String;

    fn to_request(arg: &T) -> Result<String> {
        Ok(arg.to_string())
    }
}

/// A path, as its text.
pub(crate) type PathText = Text<WindowsPath>;

/// The path `IsSymlink` looks at, as its text: a local path, or the root
/// of a share (`WindowsPath::share_root_of`), which CSI Proxy takes there
/// because it checks no `IsSymlink` path.
pub(crate) struct LookedPath;

impl RequestField for LookedPath {
    type Arg<'a> = &'a WindowsPath;
    type Wire = String;

    fn to_request(arg: &WindowsPath) -> Result<String> {
        Ok(arg.to_string())
    }
}

/// A volume ID (`\\?\Volume{guid}\`), as its text.
pub(crate) type VolumeText = Text<VolumeId>;

/// An SMB share path (`\\server\share\...`), as its text.
pub(crate) type ShareText = Text<SmbRemotePath>;

impl AnswerField for VolumeText {
    type Value = VolumeId;
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<VolumeId> {
        volume_id(operation, wire)
    }
}

/// A disk number sent as a decimal string (the string-ID layouts).
pub(crate) struct DecimalDisk;

impl RequestField for DecimalDisk {
    type Arg<'a> = u32;
    type Wire = String;

    fn to_request(arg: u32) -> Result<String> {
        Ok(arg.to_string())
    }
}

impl AnswerField for DecimalDisk {
    type Value = u32;
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<u32> {
        disk_number(operation, &wire)
    }
}

/// A repeated field, each element of the kind `K`.
pub(crate) struct Each<K>(std::marker::PhantomData<K>);

impl<K: AnswerField> AnswerField for Each<K> {
    type Value = Vec<K::Value>;
    type Wire = Vec<K::Wire>;

    fn from_answer(
        operation: Operation,
        field: &'static str,
        wire: Self::Wire,
    ) -> Result<Self::Value> {
        wire.into_iter()
            .map(|element| K::from_answer(operation, field, element))
            .collect()
    }
}

/// Volume IDs, as their texts.
pub(crate) type VolumeTexts = Each<VolumeText>;

/// Disk numbers, as decimal strings.
pub(crate) type DecimalDisks = Each<DecimalDisk>;

/// A disk number sent as an int64 (`GetVolumeDiskNumber`).
pub(crate) struct WideDisk;

impl AnswerField for WideDisk {
    type Value = u32;
    type Wire = i64;

    fn from_answer(operation: Operation, _: &'static str, wire: i64) -> Result<u32> {
        disk_number_from_i64(operation, wire)
    }
}

/// A byte count, which the wire carries as int64.
pub(crate) struct Bytes;

impl RequestField for Bytes {
    type Arg<'a> = u64;
    type Wire = i64;

    fn to_request(arg: u64) -> Result<i64> {
        wire_bytes(arg)
    }
}

impl AnswerField for Bytes {
    type Value = u64;
    type Wire = i64;

    fn from_answer(operation: Operation, field: &'static str, wire: i64) -> Result<u64> {
        byte_count(operation, field, wire)
    }
}

/// A partition number, where 0 (the wire's default) means none: every
/// partition of the disk.
pub(crate) struct PartitionNumber;

impl RequestField for PartitionNumber {
    type Arg<'a> = Option<u32>;
    type Wire = u32;

    fn to_request(arg: Option<u32>) -> Result<u32> {
        Ok(arg.unwrap_or(0))
    }
}

/// The legacy `error` field of v1alpha1/v1beta1 answers: the gRPC status
/// is authoritative, but old proxies also report failures here.
pub(crate) struct LegacyError;

impl AnswerField for LegacyError {
    type Value = ();
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<()> {
        super::convert::legacy_error(operation, wire)
    }
}
