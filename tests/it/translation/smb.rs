//! SMB: a mapping goes out whole, and its password stays out of errors,
//! even when the proxy echoes it back.

use super::pinned;
use csi_proxy_client::api::{Secret, SmbMapping};
use csi_proxy_client::testing::sample::{pod_path, share};
use csi_proxy_client::{wire, ApiGroup::Smb, ApiVersion as V, Code, Error};
use prost::Message;

#[tokio::test]
async fn smb_mappings_go_out_whole_and_secrets_stay_out_of_errors() {
    for version in [V::V1BETA1, V::V1] {
        let (_node, raw, proxy) = pinned(Smb, version).await;
        let mapping =
            SmbMapping::new(share(), "user", Secret::new("pw-123")).with_local_path(pod_path());
        // The proxy fails and echoes the password back.
        if version == V::V1BETA1 {
            raw.reply(wire::smb::v1beta1::NewSmbGlobalMappingResponse {
                error: "bad password pw-123".into(),
            });
        } else {
            raw.script(|_| {
                Err(tonic::Status::unknown(
                    "New-SmbGlobalMapping -Password pw-123 failed",
                ))
            });
        }
        let err = proxy
            .smb()
            .unwrap()
            .new_smb_global_mapping(&mapping)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Host {
                    code: Code::Unknown,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(!err.to_string().contains("pw-123"), "{err}");
        assert!(!format!("{err:?}").contains("pw-123"), "{err:?}");

        let sent = raw.only_request();
        assert_eq!(sent.path, format!("/{version}.Smb/NewSmbGlobalMapping"));
        let request = wire::smb::v1::NewSmbGlobalMappingRequest::decode(&sent.body[..]).unwrap();
        assert_eq!(request.remote_path, r"\\files\share\dir");
        assert_eq!(request.local_path, pod_path().as_str());
        assert_eq!(
            (request.username.as_str(), request.password.as_str()),
            ("user", "pw-123")
        );
    }
}
