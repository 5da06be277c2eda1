//! iSCSI: the target portal is always set, CHAP secrets go on the wire
//! but never into errors, and the disks and portals answered are checked.

use super::{assert_invalid_response, pinned};
use csi_proxy_client::api::{IscsiAuth, Secret, TargetPortal};
use csi_proxy_client::testing::sample::{portal, IQN};
use csi_proxy_client::{wire, ApiGroup::Iscsi, ApiVersion as V, Operation};
use prost::Message;

#[tokio::test]
async fn the_target_portal_is_always_set() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA1).await;
    let iscsi = proxy.iscsi().unwrap();
    iscsi.add_target_portal(&portal()).await.unwrap();
    iscsi
        .disconnect_target(&portal().with_port(3261), IQN)
        .await
        .unwrap();
    let sent = raw.requests();
    let add = wire::iscsi::v1alpha1::AddTargetPortalRequest::decode(&sent[0].body[..]).unwrap();
    let expected = wire::iscsi::v1alpha1::TargetPortal {
        target_address: "10.0.0.5".into(),
        target_port: 3260,
    };
    assert_eq!(add.target_portal, Some(expected));
    let disconnect =
        wire::iscsi::v1alpha1::DisconnectTargetRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(disconnect.target_portal.unwrap().target_port, 3261);
    assert_eq!(disconnect.iqn, IQN);
}

#[tokio::test]
async fn chap_goes_on_the_wire_but_not_into_errors() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA2).await;
    let iscsi = proxy.iscsi().unwrap();
    raw.script(|_| {
        Err(tonic::Status::unknown(
            "login with secret chap-s3cret rejected",
        ))
    });
    let auth = IscsiAuth::MutualChap {
        username: "u".into(),
        secret: Secret::new("chap-s3cret"),
    };
    let err = iscsi
        .connect_target(&portal(), IQN, &auth)
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("chap-s3cret"), "{err}");
    let request =
        wire::iscsi::v1alpha2::ConnectTargetRequest::decode(&raw.only_request().body[..]).unwrap();
    assert_eq!(
        request.auth_type,
        wire::iscsi::v1alpha2::AuthenticationType::MutualChap as i32
    );
    assert_eq!(
        (request.chap_username.as_str(), request.chap_secret.as_str()),
        ("u", "chap-s3cret")
    );

    let err = iscsi
        .set_mutual_chap_secret(&Secret::new("chap-s3cret"))
        .await
        .unwrap_err();
    assert!(!format!("{err} {err:?}").contains("chap-s3cret"));
}

#[tokio::test]
async fn target_disks_and_portals_are_checked() {
    let (_node, raw, proxy) = pinned(Iscsi, V::V1ALPHA2).await;
    let iscsi = proxy.iscsi().unwrap();
    raw.reply(wire::iscsi::v1alpha2::GetTargetDisksResponse {
        disk_i_ds: vec!["1".into(), "2".into()],
    });
    assert_eq!(
        iscsi.get_target_disks(&portal(), IQN).await.unwrap(),
        [1, 2]
    );
    raw.reply(wire::iscsi::v1alpha2::GetTargetDisksResponse {
        disk_i_ds: vec!["1".into(), "x".into()],
    });
    assert_invalid_response(
        iscsi.get_target_disks(&portal(), IQN).await,
        Operation::GetTargetDisks,
    );

    let wire_portal = |port| wire::iscsi::v1alpha2::TargetPortal {
        target_address: "a".into(),
        target_port: port,
    };
    raw.reply(wire::iscsi::v1alpha2::ListTargetPortalsResponse {
        target_portals: vec![wire_portal(3260)],
    });
    assert_eq!(
        iscsi.list_target_portals().await.unwrap(),
        [TargetPortal::new("a")]
    );
    raw.reply(wire::iscsi::v1alpha2::ListTargetPortalsResponse {
        target_portals: vec![wire_portal(70000)],
    });
    assert_invalid_response(
        iscsi.list_target_portals().await,
        Operation::ListTargetPortals,
    );
}
