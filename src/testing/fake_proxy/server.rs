//! What a layout's server is to the routing: the routing hands each call
//! to the server of its endpoint's layout (generated from the catalogue,
//! `<group>/<layout>.rs`), which answers it.

use async_trait::async_trait;
use tonic::Status;

use super::codec::Answer;
use crate::capability::Operation;

/// The server side of one message layout of a group whose operations are
/// `O`: decodes a request of `operation`, calls the backend, encodes the
/// answer. Its match over `O` is exhaustive: an operation the layout lacks
/// is named in an arm that answers [`not_in_layout`].
#[async_trait]
pub(super) trait WireServer<O>: Send + Sync {
    async fn handle(&self, operation: O, body: &[u8]) -> Answer;
}

/// What a layout's server answers for an operation none of its versions
/// has. Routing never gets there (an RPC a version lacks has no route), so
/// seeing it is a bug of ours, reported like an unknown method.
pub(super) fn not_in_layout(operation: impl Into<Operation>) -> Status {
    let operation = operation.into();
    Status::unimplemented(format!(
        "{} {} is not served by this layout",
        operation.group(),
        operation.name()
    ))
}
