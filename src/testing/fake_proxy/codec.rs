//! Decoding requests and encoding answers on the server side, with the
//! proxy's reactions to bad input: failures with code `Unknown`, as Go
//! errors reach the wire.

use prost::Message;
use tonic::Status;

use crate::api::{check_name, SmbRemotePath, TargetPortal, VolumeId, WindowsPath};
use crate::error::{Code, Error};

pub(super) type Answer = Result<Vec<u8>, Status>;

/// A request message, or `Unknown` as the proxy would fail.
pub(super) fn decode<M: Message + Default>(body: &[u8]) -> Result<M, Status> {
    M::decode(body).map_err(|e| Status::internal(format!("grpc: error unmarshalling request: {e}")))
}

/// An answer message.
pub(super) fn reply(message: impl Message) -> Answer {
    Ok(message.encode_to_vec())
}

fn unknown(message: String) -> Status {
    Status::new(Code::Unknown, message)
}

/// A path as the proxy takes it: it does not normalize, so anything but a
/// normalized local path is refused.
pub(super) fn path(raw: &str) -> Result<WindowsPath, Status> {
    match WindowsPath::new(raw) {
        Ok(path) if path.as_str() == raw => Ok(path),
        Ok(_) => Err(unknown(format!(
            "path {} is not a valid Windows path",
            crate::api::quoted(raw)
        ))),
        Err(e) => Err(unknown(e.to_string())),
    }
}

/// An optional path: empty means none.
pub(super) fn optional_path(raw: &str) -> Result<Option<WindowsPath>, Status> {
    if raw.is_empty() {
        Ok(None)
    } else {
        path(raw).map(Some)
    }
}

pub(super) fn volume(raw: String) -> Result<VolumeId, Status> {
    VolumeId::new(raw).map_err(|e| unknown(e.to_string()))
}

pub(super) fn share(raw: &str) -> Result<SmbRemotePath, Status> {
    SmbRemotePath::new(raw).map_err(|e| unknown(e.to_string()))
}

pub(super) fn name(what: &'static str, raw: &str) -> Result<(), Status> {
    check_name(what, raw).map_err(|e| unknown(e.to_string()))
}

/// A disk number sent as a decimal string, parsed as the proxy does.
pub(super) fn disk_id(raw: &str) -> Result<u32, Status> {
    raw.parse().map_err(|_| {
        unknown(format!(
            "strconv.ParseUint: parsing {raw:?}: invalid syntax"
        ))
    })
}

/// A target portal the proxy would dereference.
pub(super) fn portal(address: String, port: u32) -> Result<TargetPortal, Status> {
    let port = u16::try_from(port).map_err(|_| unknown(format!("invalid port {port}")))?;
    let portal = TargetPortal { address, port };
    portal.validate().map_err(|e| unknown(e.to_string()))?;
    Ok(portal)
}

/// A byte count from the wire (int64).
pub(super) fn bytes(raw: i64) -> Result<u64, Status> {
    u64::try_from(raw).map_err(|_| unknown(format!("invalid size {raw}")))
}

/// A byte count for the wire (int64).
pub(super) fn wire_bytes(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The gRPC status a backend failure travels as.
pub(super) fn status(error: Error) -> Status {
    match error {
        Error::Host { code, message, .. } => Status::new(code, message),
        Error::NotImplemented { .. } | Error::Unsupported { .. } => {
            Status::unimplemented(error.to_string())
        }
        Error::InvalidArgument { .. } => Status::invalid_argument(error.to_string()),
        Error::Timeout { .. } => Status::deadline_exceeded(error.to_string()),
        Error::Transport { .. } => Status::unavailable(error.to_string()),
        other => unknown(other.to_string()),
    }
}

/// Awaits a backend call and turns its failure into a status.
macro_rules! host {
    ($call:expr) => {
        $call.await.map_err(super::codec::status)?
    };
}
pub(super) use host;
