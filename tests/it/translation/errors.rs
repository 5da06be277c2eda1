//! Errors from the proxy: each gRPC status it fails with, as the error
//! kind a caller matches on.

use super::pinned;
use csi_proxy_client::{ApiGroup::Disk, ApiVersion as V, Code, Error, Operation};

#[tokio::test]
async fn status_codes_map_to_error_kinds() {
    let (_node, raw, proxy) = pinned(Disk, V::V1).await;
    let disk = proxy.disk().unwrap();
    raw.script(|_| Err(tonic::Status::unknown("Get-Disk failed")));
    match disk.rescan().await {
        Err(Error::Host {
            operation,
            code,
            message,
            os_code,
            ..
        }) => {
            assert_eq!(
                (operation, code, message.as_str(), os_code),
                (Operation::Rescan, Code::Unknown, "Get-Disk failed", None)
            );
        }
        other => panic!("{other:?}"),
    }
    raw.script(|_| Err(tonic::Status::unavailable("going away")));
    assert!(matches!(disk.rescan().await, Err(Error::Transport { .. })));
    raw.script(|_| Err(tonic::Status::invalid_argument("bad disk")));
    assert!(matches!(
        disk.rescan().await,
        Err(Error::Host {
            code: Code::InvalidArgument,
            ..
        })
    ));
}
