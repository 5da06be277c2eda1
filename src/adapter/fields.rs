//! How a value of the API travels in one field of a message, both ways:
//! as the client writes a request and reads an answer, and, with
//! `testing`, as the fake proxy reads a request and writes an answer. A
//! layout's table (`src/adapter/layout.rs`) names a field kind per field,
//! so the client and the fake proxy convert each field by the same rule.
//!
//! The client refuses what a proxy should not have sent
//! ([`Error::InvalidResponse`]); the fake proxy refuses what CSI Proxy
//! refuses, as it does: a status with code `Unknown`, in Go's words where
//! a test depends on them.

#[cfg(feature = "testing")]
use tonic::Status;

use super::convert::{byte_count, disk_number, disk_number_from_i64, volume_id, wire_bytes};
use crate::api::{SmbRemotePath, VolumeId, WindowsPath};
use crate::capability::Operation;
use crate::error::Result;

/// A field of a request, made of one argument of a trait method.
pub(crate) trait RequestField {
    /// The argument as the fake proxy's server holds it.
    type Owned;
    /// The argument as a trait method takes it.
    type Arg<'a>;
    /// The field as the generated message has it.
    type Wire;

    /// The field the client sends for `arg`.
    fn to_request(arg: Self::Arg<'_>) -> Result<Self::Wire>;

    /// The argument the fake proxy reads from the field, or the status
    /// CSI Proxy answers for it.
    #[cfg(feature = "testing")]
    fn from_request(wire: Self::Wire) -> Result<Self::Owned, Status>;

    /// The argument, as the trait method takes it, of what
    /// [`from_request`](Self::from_request) read.
    #[cfg(feature = "testing")]
    fn lend(owned: &Self::Owned) -> Self::Arg<'_>;
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

    /// The field the fake proxy sends for `value`.
    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire;
}

/// The status CSI Proxy answers for a request field it cannot use: a Go
/// error, code `Unknown`.
#[cfg(feature = "testing")]
pub(crate) fn refused(message: impl Into<String>) -> Status {
    Status::new(tonic::Code::Unknown, message.into())
}

/// A value sent as it is: a number, a flag, a string or a list of them.
pub(crate) struct Plain<T>(std::marker::PhantomData<T>);

impl<T: Clone> RequestField for Plain<T> {
    type Owned = T;
    type Arg<'a> = T;
    type Wire = T;

    fn to_request(arg: T) -> Result<T> {
        Ok(arg)
    }

    #[cfg(feature = "testing")]
    fn from_request(wire: T) -> Result<T, Status> {
        Ok(wire)
    }

    #[cfg(feature = "testing")]
    fn lend(owned: &T) -> T {
        owned.clone()
    }
}

impl<T> AnswerField for Plain<T> {
    type Value = T;
    type Wire = T;

    fn from_answer(_: Operation, _: &'static str, wire: T) -> Result<T> {
        Ok(wire)
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: T) -> T {
        value
    }
}

/// Names CSI Proxy takes as they are, but refuses when empty or with
/// control characters, as the argument checks do.
macro_rules! name_fields {
    ($($(#[$doc:meta])* $kind:ident = $what:literal;)+) => {$(
        $(#[$doc])*
        pub(crate) struct $kind;

        impl RequestField for $kind {
            type Owned = String;
            type Arg<'a> = &'a str;
            type Wire = String;

            fn to_request(arg: &str) -> Result<String> {
                Ok(arg.to_owned())
            }

            #[cfg(feature = "testing")]
            fn from_request(wire: String) -> Result<String, Status> {
                crate::api::check_name($what, &wire).map_err(|e| refused(e.to_string()))?;
                Ok(wire)
            }

            #[cfg(feature = "testing")]
            fn lend(owned: &String) -> &str {
                owned
            }
        }
    )+};
}

name_fields! {
    /// An iSCSI target's IQN.
    Iqn = "IQN";
    /// A Windows service's name.
    ServiceName = "service name";
    /// A disk's page 0x83 identifier (v1alpha1's `GetDiskNumberByName`,
    /// which the fake proxy serves by hand).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    DiskName = "disk name";
}

/// A path, as its text. The proxy does not normalize: the fake refuses a
/// path that is not already a normalized local path.
pub(crate) struct PathText;

impl RequestField for PathText {
    type Owned = WindowsPath;
    type Arg<'a> = &'a WindowsPath;
    type Wire = String;

    fn to_request(arg: &WindowsPath) -> Result<String> {
        Ok(arg.to_string())
    }

    #[cfg(feature = "testing")]
    fn from_request(wire: String) -> Result<WindowsPath, Status> {
        match WindowsPath::new(&wire) {
            Ok(path) if path.as_str() == wire => Ok(path),
            Ok(_) => Err(refused(format!(
                "path {} is not a valid Windows path",
                crate::api::quoted(&wire)
            ))),
            Err(e) => Err(refused(e.to_string())),
        }
    }

    #[cfg(feature = "testing")]
    fn lend(owned: &WindowsPath) -> &WindowsPath {
        owned
    }
}

/// Values sent as their text, which the fake proxy reads back with the
/// value's own check (`new`), refusing what it refuses.
macro_rules! text_fields {
    ($($(#[$doc:meta])* $kind:ident: $value:ty;)+) => {$(
        $(#[$doc])*
        pub(crate) struct $kind;

        impl RequestField for $kind {
            type Owned = $value;
            type Arg<'a> = &'a $value;
            type Wire = String;

            fn to_request(arg: &$value) -> Result<String> {
                Ok(arg.to_string())
            }

            #[cfg(feature = "testing")]
            fn from_request(wire: String) -> Result<$value, Status> {
                <$value>::new(wire).map_err(|e| refused(e.to_string()))
            }

            #[cfg(feature = "testing")]
            fn lend(owned: &$value) -> &$value {
                owned
            }
        }
    )+};
}

text_fields! {
    /// A volume ID (`\\?\Volume{guid}\`), as its text.
    VolumeText: VolumeId;
    /// An SMB share path (`\\server\share\...`), as its text.
    ShareText: SmbRemotePath;
}

impl AnswerField for VolumeText {
    type Value = VolumeId;
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<VolumeId> {
        volume_id(operation, wire)
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: VolumeId) -> String {
        value.to_string()
    }
}

/// A disk number sent as a decimal string (the string-ID layouts).
pub(crate) struct DecimalDisk;

impl RequestField for DecimalDisk {
    type Owned = u32;
    type Arg<'a> = u32;
    type Wire = String;

    fn to_request(arg: u32) -> Result<String> {
        Ok(arg.to_string())
    }

    /// Parsed as the proxy parses it.
    #[cfg(feature = "testing")]
    fn from_request(wire: String) -> Result<u32, Status> {
        wire.parse().map_err(|_| {
            refused(format!(
                "strconv.ParseUint: parsing {wire:?}: invalid syntax"
            ))
        })
    }

    #[cfg(feature = "testing")]
    fn lend(owned: &u32) -> u32 {
        *owned
    }
}

impl AnswerField for DecimalDisk {
    type Value = u32;
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<u32> {
        disk_number(operation, &wire)
    }

    #[cfg(feature = "testing")]
    fn to_answer(value: u32) -> String {
        value.to_string()
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

    #[cfg(feature = "testing")]
    fn to_answer(value: Self::Value) -> Self::Wire {
        value.into_iter().map(K::to_answer).collect()
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

    #[cfg(feature = "testing")]
    fn to_answer(value: u32) -> i64 {
        i64::from(value)
    }
}

/// A byte count, which the wire carries as int64.
pub(crate) struct Bytes;

impl RequestField for Bytes {
    type Owned = u64;
    type Arg<'a> = u64;
    type Wire = i64;

    fn to_request(arg: u64) -> Result<i64> {
        wire_bytes(arg)
    }

    #[cfg(feature = "testing")]
    fn from_request(wire: i64) -> Result<u64, Status> {
        u64::try_from(wire).map_err(|_| refused(format!("invalid size {wire}")))
    }

    #[cfg(feature = "testing")]
    fn lend(owned: &u64) -> u64 {
        *owned
    }
}

impl AnswerField for Bytes {
    type Value = u64;
    type Wire = i64;

    fn from_answer(operation: Operation, field: &'static str, wire: i64) -> Result<u64> {
        byte_count(operation, field, wire)
    }

    /// More than the wire can carry is sent as the most it can.
    #[cfg(feature = "testing")]
    fn to_answer(value: u64) -> i64 {
        i64::try_from(value).unwrap_or(i64::MAX)
    }
}

/// A partition number, where 0 (the wire's default) means none: every
/// partition of the disk.
pub(crate) struct PartitionNumber;

impl RequestField for PartitionNumber {
    type Owned = Option<u32>;
    type Arg<'a> = Option<u32>;
    type Wire = u32;

    fn to_request(arg: Option<u32>) -> Result<u32> {
        Ok(arg.unwrap_or(0))
    }

    #[cfg(feature = "testing")]
    fn from_request(wire: u32) -> Result<Option<u32>, Status> {
        Ok(Some(wire).filter(|&p| p != 0))
    }

    #[cfg(feature = "testing")]
    fn lend(owned: &Option<u32>) -> Option<u32> {
        *owned
    }
}

/// The legacy `error` field of v1alpha1/v1beta1 answers: the gRPC status
/// is authoritative, but old proxies also report failures here. The fake
/// proxy, as CSI Proxy from v1.0, leaves it empty.
pub(crate) struct LegacyError;

impl AnswerField for LegacyError {
    type Value = ();
    type Wire = String;

    fn from_answer(operation: Operation, _: &'static str, wire: String) -> Result<()> {
        super::convert::legacy_error(operation, wire)
    }

    #[cfg(feature = "testing")]
    fn to_answer((): ()) -> String {
        String::new()
    }
}
