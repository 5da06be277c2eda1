//! Checks and conversions of what a proxy sends back, shared by the
//! adapters. A malformed answer becomes [`Error::InvalidResponse`], never a
//! panic.

use std::collections::BTreeMap;

use crate::api::VolumeId;
use crate::capability::Operation;
use crate::error::{Code, Error, Result};

/// A disk number sent as a decimal string (up to v1beta2).
pub(super) fn disk_number(operation: Operation, text: &str) -> Result<u32> {
    // `u32::from_str` also takes a leading '+'; the proxy never sends one.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid_response(
            operation,
            format!("disk number {text:?} is not a decimal number"),
        ));
    }
    text.parse().map_err(|_| {
        Error::invalid_response(operation, format!("disk number {text} is out of range"))
    })
}

/// A map keyed by decimal disk-number strings, re-keyed by number.
pub(super) fn by_disk_number<V, T>(
    operation: Operation,
    map: impl IntoIterator<Item = (String, V)>,
    mut convert: impl FnMut(V) -> T,
) -> Result<BTreeMap<u32, T>> {
    map.into_iter()
        .map(|(key, value)| Ok((disk_number(operation, &key)?, convert(value))))
        .collect()
}

/// A disk number sent as an int64 (`GetVolumeDiskNumber`).
pub(super) fn disk_number_from_i64(operation: Operation, number: i64) -> Result<u32> {
    u32::try_from(number).map_err(|_| {
        Error::invalid_response(operation, format!("disk number {number} is out of range"))
    })
}

/// A byte count, which the wire carries as int64.
pub(super) fn byte_count(operation: Operation, what: &str, bytes: i64) -> Result<u64> {
    u64::try_from(bytes)
        .map_err(|_| Error::invalid_response(operation, format!("{what} is negative: {bytes}")))
}

/// A byte count for a request: at most `i64::MAX`.
pub(super) fn wire_bytes(bytes: u64) -> Result<i64> {
    i64::try_from(bytes).map_err(|_| {
        Error::invalid_argument(
            "size",
            format!("{bytes} bytes is more than the wire can carry"),
        )
    })
}

/// A volume ID the proxy returned.
pub(super) fn volume_id(operation: Operation, id: String) -> Result<VolumeId> {
    VolumeId::new(id).map_err(|e| Error::invalid_response(operation, format!("volume ID: {e}")))
}

/// The legacy `error` field of v1alpha1/v1beta1 responses: the gRPC status
/// is authoritative, but old proxies also report failures here.
pub(super) fn legacy_error(operation: Operation, error: String) -> Result<()> {
    if error.is_empty() {
        Ok(())
    } else {
        Err(Error::host(operation, Code::Unknown, error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP: Operation = Operation::ListDiskIds;

    #[test]
    fn disk_numbers_must_be_plain_decimals_in_range() {
        assert_eq!(disk_number(OP, "0").unwrap(), 0);
        assert_eq!(disk_number(OP, "4294967295").unwrap(), u32::MAX);
        for bad in ["", "-1", "+1", "1.0", "0x1", " 1", "disk1", "4294967296"] {
            assert!(
                matches!(disk_number(OP, bad), Err(Error::InvalidResponse { .. })),
                "{bad:?}"
            );
        }
        assert!(disk_number_from_i64(OP, -1).is_err());
        assert!(disk_number_from_i64(OP, 1 << 40).is_err());
        assert_eq!(disk_number_from_i64(OP, 7).unwrap(), 7);
    }

    #[test]
    fn sizes_are_never_negative() {
        assert!(byte_count(OP, "size", -5).is_err());
        assert_eq!(byte_count(OP, "size", 5).unwrap(), 5);
        assert!(wire_bytes(u64::MAX).is_err());
    }

    #[test]
    fn legacy_errors_fail() {
        assert!(legacy_error(OP, String::new()).is_ok());
        let err = legacy_error(OP, "mount failed".into()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Host {
                    code: Code::Unknown,
                    ..
                }
            ),
            "{err}"
        );
    }
}
