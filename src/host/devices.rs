//! The seam between the disk group and the disks' own answers: the storage
//! IOCTLs CSI Proxy's host layer sends each disk for its number and its
//! SCSI page 0x83 identifier. [`OsDevices`] sends them;
//! [`page83_of`] reads the answer, so its parsing is tested on recorded
//! descriptors laid out as Microsoft documents
//! `STORAGE_DEVICE_ID_DESCRIPTOR`.

use std::fs::OpenOptions;
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;

use windows::Win32::Foundation::HANDLE;
use windows::Win32::System::Ioctl::{
    PropertyStandardQuery, StorageDeviceIdProperty, IOCTL_STORAGE_GET_DEVICE_NUMBER,
    IOCTL_STORAGE_QUERY_PROPERTY, STORAGE_DEVICE_NUMBER, STORAGE_PROPERTY_QUERY,
};
use windows::Win32::System::IO::DeviceIoControl;

/// What a disk says of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceAnswer {
    /// Its device number (`IOCTL_STORAGE_GET_DEVICE_NUMBER`): the number
    /// `\\.\PhysicalDriveN` and the disk group use.
    pub number: u32,
    /// Its `STORAGE_DEVICE_ID_DESCRIPTOR`, as returned
    /// (`IOCTL_STORAGE_QUERY_PROPERTY`, `StorageDeviceIdProperty`).
    pub id_descriptor: Vec<u8>,
}

/// How the disk group asks a disk.
pub(crate) trait Devices: Send + Sync + 'static {
    /// Asks the disk at `path` (its device interface path, as
    /// `MSFT_Disk.Path` gives it).
    fn ask(&self, path: &str) -> io::Result<DeviceAnswer>;
}

/// The host's disks.
pub(crate) struct OsDevices;

/// `FILE_SHARE_READ | FILE_SHARE_WRITE`: others keep using the disk.
const SHARE_READ_WRITE: u32 = 0x1 | 0x2;
/// Room for the identifiers of any disk seen so far.
const DESCRIPTOR_BUFFER: usize = 4096;

impl Devices for OsDevices {
    fn ask(&self, path: &str) -> io::Result<DeviceAnswer> {
        // No access rights: both IOCTLs only query the device.
        let device = OpenOptions::new()
            .access_mode(0)
            .share_mode(SHARE_READ_WRITE)
            .open(path)?;
        let handle = HANDLE(device.as_raw_handle());
        let mut number = STORAGE_DEVICE_NUMBER::default();
        let size = std::mem::size_of::<STORAGE_DEVICE_NUMBER>();
        let mut returned = 0u32;
        // SAFETY: an open handle, an output buffer of the structure's size,
        // and the count of bytes written, which a synchronous call needs;
        // `device` lives until the end.
        unsafe {
            DeviceIoControl(
                handle,
                IOCTL_STORAGE_GET_DEVICE_NUMBER,
                None,
                0,
                Some((&mut number as *mut STORAGE_DEVICE_NUMBER).cast()),
                size as u32,
                Some(&mut returned),
                None,
            )
        }
        .map_err(io::Error::from)?;
        if (returned as usize) < size {
            return Err(io::Error::other(format!(
                "the disk gave {returned} bytes for its number, not {size}"
            )));
        }
        let query = STORAGE_PROPERTY_QUERY {
            PropertyId: StorageDeviceIdProperty,
            QueryType: PropertyStandardQuery,
            ..Default::default()
        };
        let mut descriptor = vec![0u8; DESCRIPTOR_BUFFER];
        let mut returned = 0u32;
        // SAFETY: the query structure as input, a buffer of its length as
        // output, and the count of bytes written.
        unsafe {
            DeviceIoControl(
                handle,
                IOCTL_STORAGE_QUERY_PROPERTY,
                Some((&query as *const STORAGE_PROPERTY_QUERY).cast()),
                std::mem::size_of::<STORAGE_PROPERTY_QUERY>() as u32,
                Some(descriptor.as_mut_ptr().cast()),
                descriptor.len() as u32,
                Some(&mut returned),
                None,
            )
        }
        .map_err(io::Error::from)?;
        descriptor.truncate(returned as usize);
        Ok(DeviceAnswer {
            number: number.DeviceNumber,
            id_descriptor: descriptor,
        })
    }
}

/// `STORAGE_IDENTIFIER_CODE_SET`: the identifier is bytes.
pub(crate) const CODE_SET_BINARY: u32 = 1;
/// `STORAGE_IDENTIFIER_CODE_SET`: the identifier is ASCII text.
const CODE_SET_ASCII: u32 = 2;
/// `STORAGE_ASSOCIATION_TYPE`: the identifier names the device itself
/// (not a port or a target).
const ASSOCIATION_DEVICE: u32 = 0;
/// Where the first `STORAGE_IDENTIFIER` starts in the descriptor, after
/// `Version`, `Size` and `NumberOfIdentifiers`.
const FIRST_IDENTIFIER: usize = 12;
/// Where an identifier's bytes start in its `STORAGE_IDENTIFIER`, after
/// `CodeSet`, `Type`, `IdentifierSize`, `NextOffset` and `Association`.
const IDENTIFIER_BYTES: usize = 16;

/// The page 0x83 identifier in a `STORAGE_DEVICE_ID_DESCRIPTOR`, as CSI
/// Proxy reports it: the first identifier of the device itself in binary
/// (as lower-case hex) or ASCII (as it is); empty when there is none.
/// A descriptor that does not hold together is an error, never a guess.
pub(crate) fn page83_of(descriptor: &[u8]) -> Result<String, String> {
    let u32_at = |at: usize| -> Result<u32, String> {
        let bytes = descriptor
            .get(at..at + 4)
            .ok_or_else(|| format!("the descriptor ends at byte {}", descriptor.len()))?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
    };
    let u16_at = |at: usize| -> Result<u16, String> {
        let bytes = descriptor
            .get(at..at + 2)
            .ok_or_else(|| format!("the descriptor ends at byte {}", descriptor.len()))?;
        Ok(u16::from_le_bytes(bytes.try_into().expect("two bytes")))
    };
    let count = u32_at(8)?;
    let mut at = FIRST_IDENTIFIER;
    for index in 0..count {
        let (code_set, size) = (u32_at(at)?, usize::from(u16_at(at + 8)?));
        let (next, association) = (usize::from(u16_at(at + 10)?), u32_at(at + 12)?);
        let start = at + IDENTIFIER_BYTES;
        let bytes = descriptor.get(start..start + size).ok_or_else(|| {
            format!(
                "identifier {index} runs past the descriptor's {} bytes",
                descriptor.len()
            )
        })?;
        if association == ASSOCIATION_DEVICE {
            match code_set {
                CODE_SET_BINARY => return Ok(bytes.iter().map(|b| format!("{b:02x}")).collect()),
                CODE_SET_ASCII => return Ok(String::from_utf8_lossy(bytes).into_owned()),
                _ => {}
            }
        }
        if next == 0 {
            break;
        }
        at += next;
    }
    Ok(String::new())
}

/// Recorded descriptors, for the tests here and the disk group's.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A `STORAGE_IDENTIFIER`, padded to 4 bytes, as `NextOffset` steps.
    pub(crate) fn identifier(code_set: u32, kind: u32, association: u32, bytes: &[u8]) -> Vec<u8> {
        let padded = (IDENTIFIER_BYTES + bytes.len()).next_multiple_of(4);
        let mut out = Vec::with_capacity(padded);
        out.extend(code_set.to_le_bytes());
        out.extend(kind.to_le_bytes());
        out.extend((bytes.len() as u16).to_le_bytes());
        out.extend((padded as u16).to_le_bytes());
        out.extend(association.to_le_bytes());
        out.extend(bytes);
        out.resize(padded, 0);
        out
    }

    /// A `STORAGE_DEVICE_ID_DESCRIPTOR` of `identifiers`.
    pub(crate) fn descriptor(identifiers: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = identifiers.concat();
        let mut out = Vec::new();
        out.extend(1u32.to_le_bytes()); // Version
        out.extend(((FIRST_IDENTIFIER + body.len()) as u32).to_le_bytes());
        out.extend((identifiers.len() as u32).to_le_bytes());
        out.extend(body);
        out
    }

    /// `StorageIdTypeVendorId` and `StorageIdTypeFCPHName` (NAA).
    const VENDOR_ID: u32 = 1;
    pub(crate) const NAA: u32 = 3;
    /// `StorageIdAssocPort`.
    const ASSOCIATION_PORT: u32 = 1;

    #[test]
    fn a_binary_naa_identifier_is_lower_case_hex() {
        let naa = [0x60, 0x02, 0x24, 0x80, 0xAB, 0xCD, 0xEF, 0x01];
        let recorded = descriptor(&[identifier(CODE_SET_BINARY, NAA, 0, &naa)]);
        assert_eq!(page83_of(&recorded).unwrap(), "60022480abcdef01");
    }

    #[test]
    fn an_ascii_vendor_identifier_is_kept_as_it_is() {
        // What a Google persistent disk reports, spaces and all.
        let vendor = b"Google  persistent-disk-1";
        let recorded = descriptor(&[identifier(CODE_SET_ASCII, VENDOR_ID, 0, vendor)]);
        assert_eq!(page83_of(&recorded).unwrap(), "Google  persistent-disk-1");
    }

    #[test]
    fn identifiers_of_the_port_are_passed_over() {
        let recorded = descriptor(&[
            identifier(CODE_SET_BINARY, NAA, ASSOCIATION_PORT, &[0xFF; 8]),
            identifier(3, NAA, 0, b"utf-8 is not read"),
            identifier(CODE_SET_BINARY, NAA, 0, &[0x01, 0x02]),
        ]);
        assert_eq!(page83_of(&recorded).unwrap(), "0102");
        assert_eq!(page83_of(&descriptor(&[])).unwrap(), "");
    }

    #[test]
    fn a_descriptor_that_does_not_hold_together_is_an_error() {
        let whole = descriptor(&[identifier(CODE_SET_BINARY, NAA, 0, &[1; 16])]);
        for cut in [0, 4, 11, 20, whole.len() - 1] {
            assert!(page83_of(&whole[..cut]).is_err(), "cut at {cut}");
        }
        // More identifiers announced than there are.
        let mut lying = descriptor(&[identifier(CODE_SET_BINARY, NAA, ASSOCIATION_PORT, &[1])]);
        lying[8] = 3;
        assert!(page83_of(&lying).is_err());
    }
}
