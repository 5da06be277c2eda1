//! Decoding requests and encoding answers on the server side, and the
//! statuses a backend's failures travel as. (How each field is read, and
//! refused as the proxy refuses it, is `super::fields`.)

use prost::Message;
use tonic::Status;

use super::fields::refused;
use crate::error::Error;

pub(super) type Answer = Result<Vec<u8>, Status>;

/// A request message, or `Unknown` as the proxy would fail.
pub(super) fn decode<M: Message + Default>(body: &[u8]) -> Result<M, Status> {
    M::decode(body).map_err(|e| Status::internal(format!("grpc: error unmarshalling request: {e}")))
}

/// An answer message.
pub(super) fn reply(message: impl Message) -> Answer {
    Ok(message.encode_to_vec())
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
        other => refused(other.to_string()),
    }
}

/// Awaits a backend call and turns its failure into a status.
macro_rules! host {
    ($call:expr) => {
        $call
            .await
            .map_err($crate::testing::fake_proxy::codec::status)?
    };
}
pub(super) use host;
