//! The iSCSI group against recorded `MSFT_iSCSI*` objects, shaped as
//! Microsoft documents the classes (`MSFT_iSCSITargetPortal`,
//! `MSFT_iSCSITarget`, `MSFT_iSCSISession`, `MSFT_iSCSIConnection`,
//! `MSFT_Disk` and their associations): the queries and calls it makes,
//! what it makes of their answers, and the conformance suite over the
//! seam.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::recorded::{
    failed_with_win32, instance_path, not_found, object, returned, text, Method, RecordedWmi, Store,
};
use crate::api::{IscsiApi, IscsiAuth, Secret, TargetPortal};
use crate::capability::Operation;
use crate::host::disk::DISK;
use crate::host::iscsi::{
    HostIscsi, CONNECTION, PORTAL, SESSION, TARGET, TO_CONNECTION, TO_DISK, TO_PORTAL, TO_SESSION,
};
use crate::host::wmi::{WmiValue, PATH, STORAGE};
use crate::testing::conformance::{self, IscsiFixture, IscsiTargetFixture};
use crate::Error;

/// What the stand-in fails a refused login with (`WBEM_E_FAILED`, the
/// code in the provider's error object): `ERROR_LOGON_FAILURE`.
const LOGON_FAILURE: u32 = 1326;
/// What it fails a portal that does not respond with: `ERROR_TIMEOUT`.
const NO_RESPONSE: u32 = 1460;

/// A target on the network: its CHAP user and secret, the initiator
/// secret it expects for mutual CHAP, and its one disk's number.
struct NetworkTarget {
    iqn: &'static str,
    chap: (&'static str, &'static str),
    mutual: Option<&'static str>,
    disk: u32,
}

/// The storage network behind the initiator: one portal, two targets.
struct Network {
    portal: TargetPortal,
    targets: Vec<NetworkTarget>,
    /// The initiator's mutual CHAP secret, once set.
    initiator_secret: Mutex<Option<String>>,
}

fn network() -> Arc<Network> {
    Arc::new(Network {
        portal: TargetPortal::new("10.0.0.5"),
        targets: vec![
            NetworkTarget {
                iqn: "iqn.2026-11.test:one-way",
                chap: ("initiator", "one-way-secret"),
                mutual: None,
                disk: 7,
            },
            NetworkTarget {
                iqn: "iqn.2026-11.test:mutual",
                chap: ("initiator", "mutual-secret"),
                mutual: Some("the-initiators-own"),
                disk: 8,
            },
        ],
        initiator_secret: Mutex::new(None),
    })
}

fn fixture(network: &Network) -> IscsiFixture {
    let target = |t: &NetworkTarget| IscsiTargetFixture {
        iqn: t.iqn.to_owned(),
        chap_username: t.chap.0.to_owned(),
        chap_secret: Secret::new(t.chap.1),
    };
    IscsiFixture {
        portal: network.portal.clone(),
        one_way: target(&network.targets[0]),
        mutual: target(&network.targets[1]),
        mutual_secret: Secret::new(network.targets[1].mutual.unwrap()),
    }
}

fn path(class: &str, key: &str) -> String {
    instance_path(STORAGE, class, "Key", key)
}

fn param<'a>(params: &'a HashMap<&str, WmiValue>, name: &str) -> Option<&'a str> {
    match params.get(name) {
        Some(WmiValue::String(value)) => Some(value),
        _ => None,
    }
}

/// `MSFT_iSCSITargetPortal.New`: registers a portal that responds, and
/// records the targets it offers.
fn new_portal(network: Arc<Network>) -> Method {
    Box::new(move |store: &mut Store, _, params| {
        let address = param(params, "TargetPortalAddress").unwrap_or_default();
        let port = params.get("TargetPortalPortNumber").cloned();
        let expected = WmiValue::UInt(network.portal.port.into());
        if address != network.portal.address || port != Some(expected.clone()) {
            let said = "This operation returned because the timeout period expired.";
            return Err(failed_with_win32(NO_RESPONSE, said));
        }
        let portal_path = path(PORTAL, address);
        store.add(
            PORTAL,
            object([
                ("TargetPortalAddress", text(address)),
                ("TargetPortalPortNumber", expected),
                ("IsDataDigest", WmiValue::Bool(false)),
                ("IsHeaderDigest", WmiValue::Bool(false)),
                (PATH, text(&portal_path)),
            ]),
        );
        for target in &network.targets {
            let target_path = path(TARGET, target.iqn);
            if store.at(&target_path).is_none() {
                store.add(
                    TARGET,
                    object([
                        ("NodeAddress", text(target.iqn)),
                        ("IsConnected", WmiValue::Bool(false)),
                        ("IsDiscovered", WmiValue::Bool(true)),
                        (PATH, text(&target_path)),
                    ]),
                );
            }
            store.link(TO_PORTAL, &portal_path, &target_path);
        }
        Ok(returned(0))
    })
}

/// `MSFT_iSCSITarget.Connect`: logs in when the authentication matches
/// what the target expects, attaching its disk.
fn connect(network: Arc<Network>) -> Method {
    Box::new(move |store: &mut Store, _, params| {
        let iqn = param(params, "NodeAddress").unwrap_or_default();
        let Some(target) = network.targets.iter().find(|t| t.iqn == iqn) else {
            return Err(not_found());
        };
        let chap = (param(params, "ChapUsername"), param(params, "ChapSecret"));
        let chap_ok = chap == (Some(target.chap.0), Some(target.chap.1));
        let initiator = network.initiator_secret.lock().unwrap().clone();
        let authenticated = match param(params, "AuthenticationType") {
            Some("ONEWAYCHAP") => chap_ok && target.mutual.is_none(),
            Some("MUTUALCHAP") => {
                chap_ok && target.mutual.is_some() && initiator.as_deref() == target.mutual
            }
            _ => false,
        };
        if !authenticated {
            // A provider that echoes what it was given, as some do.
            let given = params.get("ChapSecret");
            let said = format!("The user name or password is incorrect: {given:?}");
            return Err(failed_with_win32(LOGON_FAILURE, &said));
        }
        let target_path = path(TARGET, iqn);
        let (session, connection, disk) = (
            path(SESSION, iqn),
            path(CONNECTION, iqn),
            path(DISK, &target.disk.to_string()),
        );
        if let Some(found) = store.at(&target_path) {
            found.insert("IsConnected".into(), WmiValue::Bool(true));
        }
        store.add(
            SESSION,
            object([
                ("SessionIdentifier", text(&format!("session-{iqn}"))),
                ("IsPersistent", WmiValue::Bool(false)),
                ("IsConnected", WmiValue::Bool(true)),
                (PATH, text(&session)),
            ]),
        );
        store.add(
            CONNECTION,
            object([
                ("ConnectionIdentifier", text(iqn)),
                (PATH, text(&connection)),
            ]),
        );
        store.add(
            DISK,
            object([
                ("Number", WmiValue::UInt(target.disk.into())),
                (PATH, text(&disk)),
            ]),
        );
        store.link(TO_SESSION, &target_path, &session);
        store.link(TO_CONNECTION, &target_path, &connection);
        store.link(TO_DISK, &connection, &disk);
        Ok(returned(0))
    })
}

/// `MSFT_iSCSITarget.Disconnect` on a target: ends the session named,
/// with its connection and disk.
fn disconnect() -> Method {
    Box::new(|store: &mut Store, target_path, params| {
        let id = param(params, "SessionIdentifier").unwrap_or_default();
        let iqn = id.strip_prefix("session-").ok_or_else(not_found)?;
        if !store.remove(&path(SESSION, iqn)) {
            return Err(not_found());
        }
        for connection in store.associated(target_path, TO_CONNECTION, CONNECTION) {
            let connection = connection[PATH].clone();
            let WmiValue::String(connection) = connection else {
                continue;
            };
            for disk in store.associated(&connection, TO_DISK, DISK) {
                if let WmiValue::String(disk) = &disk[PATH] {
                    store.remove(disk);
                }
            }
            store.remove(&connection);
        }
        let target = store.at(target_path).ok_or_else(not_found)?;
        target.insert("IsConnected".into(), WmiValue::Bool(false));
        Ok(returned(0))
    })
}

/// The initiator over the stand-in for `network`.
fn recorded(network: &Arc<Network>) -> Arc<RecordedWmi> {
    let set_secret = {
        let network = network.clone();
        Box::new(
            move |_: &mut Store, _: &str, params: &HashMap<&str, WmiValue>| {
                let secret = param(params, "ChapSecret").map(str::to_owned);
                *network.initiator_secret.lock().unwrap() = secret;
                Ok(returned(0))
            },
        ) as Method
    };
    let remove_portal = Box::new(
        |store: &mut Store, target: &str, _: &HashMap<&str, WmiValue>| match store.remove(target) {
            true => Ok(returned(0)),
            false => Err(not_found()),
        },
    ) as Method;
    let unregister = Box::new(
        |store: &mut Store, target: &str, _: &HashMap<&str, WmiValue>| {
            let session = store.at(target).ok_or_else(not_found)?;
            session.insert("IsPersistent".into(), WmiValue::Bool(false));
            Ok(returned(0))
        },
    ) as Method;
    Arc::new(
        RecordedWmi::new(STORAGE)
            .with_method(PORTAL, "New", new_portal(network.clone()))
            .with_method(PORTAL, "Remove", remove_portal)
            .with_method(TARGET, "Connect", connect(network.clone()))
            .with_method(TARGET, "Disconnect", disconnect())
            .with_method(SESSION, "Unregister", unregister)
            .with_method(SESSION, "SetCHAPSecret", set_secret),
    )
}

fn one_way(network: &Network) -> IscsiAuth {
    let (username, secret) = network.targets[0].chap;
    IscsiAuth::OneWayChap {
        username: username.to_owned(),
        secret: Secret::new(secret),
    }
}

/// The initiator over a fresh network, logged in to its one-way target.
async fn logged_in() -> (Arc<Network>, Arc<RecordedWmi>, HostIscsi) {
    let network = network();
    let wmi = recorded(&network);
    let iscsi = HostIscsi::new(wmi.clone());
    let (portal, iqn) = (&network.portal, network.targets[0].iqn);
    iscsi.add_target_portal(portal).await.unwrap();
    let auth = one_way(&network);
    iscsi.connect_target(portal, iqn, &auth).await.unwrap();
    (network, wmi, iscsi)
}

const PORTAL_QUERY: &str = "query SELECT * FROM MSFT_iSCSITargetPortal WHERE TargetPortalAddress = '10.0.0.5' AND TargetPortalPortNumber = 3260";

#[tokio::test]
async fn the_iscsi_group_passes_the_conformance_suite_over_recorded_objects() {
    let network = network();
    let wmi = recorded(&network);
    let iscsi = HostIscsi::new(wmi.clone());
    let report = conformance::iscsi(&iscsi, &fixture(&network))
        .await
        .unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_eq!(report.succeeded.len(), 8, "every operation: {report:?}");
    assert!(wmi.objects(PORTAL).is_empty());
    assert!(wmi.objects(SESSION).is_empty());
}

#[tokio::test]
async fn a_login_asks_for_the_portal_its_targets_and_connects_once() {
    let network = network();
    let wmi = recorded(&network);
    let iscsi = HostIscsi::new(wmi.clone());
    let portal = &network.portal;
    iscsi.add_target_portal(portal).await.unwrap();
    assert_eq!(
        wmi.take_log(),
        [
            PORTAL_QUERY.to_owned(),
            format!(
                r#"call {PORTAL} New(TargetPortalAddress=String("10.0.0.5"), TargetPortalPortNumber=UInt(3260))"#
            ),
        ]
    );
    let iqn = network.targets[0].iqn;
    iscsi
        .connect_target(portal, iqn, &one_way(&network))
        .await
        .unwrap();
    let portal_path = path(PORTAL, "10.0.0.5");
    assert_eq!(
        wmi.take_log(),
        [
            PORTAL_QUERY.to_owned(),
            format!(
                "query ASSOCIATORS OF {{{portal_path}}} WHERE AssocClass = {TO_PORTAL} \
                 ResultClass = {TARGET} ResultRole = iSCSITarget Role = iSCSITargetPortal"
            ),
            format!(
                r#"call {TARGET} Connect(NodeAddress=String("{iqn}"), TargetPortalAddress=String("10.0.0.5"), TargetPortalPortNumber=UInt(3260), AuthenticationType=String("ONEWAYCHAP"), ChapUsername=String("initiator"), ChapSecret=String("one-way-secret"))"#
            ),
        ]
    );
    // Logged in already: nothing more is called.
    iscsi
        .connect_target(portal, iqn, &one_way(&network))
        .await
        .unwrap();
    assert!(wmi.take_log().iter().all(|r| r.starts_with("query ")));
    assert_eq!(iscsi.get_target_disks(portal, iqn).await.unwrap(), [7]);
    // Registering again changes nothing.
    iscsi.add_target_portal(portal).await.unwrap();
    assert_eq!(wmi.take_log().last().unwrap(), PORTAL_QUERY);
}

#[tokio::test]
async fn a_persistent_session_is_unregistered_before_the_logout() {
    let (network, wmi, iscsi) = logged_in().await;
    let (portal, iqn) = (&network.portal, network.targets[0].iqn);
    let session = path(SESSION, iqn);
    let persistent = WmiValue::Bool(true);
    wmi.store()
        .at(&session)
        .unwrap()
        .insert("IsPersistent".into(), persistent);
    wmi.take_log();
    iscsi.disconnect_target(portal, iqn).await.unwrap();
    let calls: Vec<String> = (wmi.take_log().into_iter())
        .filter(|r| r.starts_with("call "))
        .collect();
    assert_eq!(
        calls,
        [
            format!("call {session} Unregister()"),
            format!(
                r#"call {} Disconnect(SessionIdentifier=String("session-{iqn}"))"#,
                path(TARGET, iqn)
            ),
        ]
    );
    // Logged out (or restarted since): no disks, and a second logout has
    // nothing to do, as CSI Proxy answers.
    assert_eq!(iscsi.get_target_disks(portal, iqn).await.unwrap(), []);
    iscsi.disconnect_target(portal, iqn).await.unwrap();
    let calls: Vec<String> = (wmi.take_log().into_iter())
        .filter(|r| r.starts_with("call "))
        .collect();
    assert!(calls.is_empty(), "{calls:?}");
}

#[tokio::test]
async fn a_disk_seen_through_two_connections_is_listed_once() {
    let (network, wmi, iscsi) = logged_in().await;
    let (portal, iqn) = (&network.portal, network.targets[0].iqn);
    {
        let mut store = wmi.store();
        let second = path(CONNECTION, "second");
        store.add(CONNECTION, object([(PATH, text(&second))]));
        store.link(TO_CONNECTION, &path(TARGET, iqn), &second);
        store.link(TO_DISK, &second, &path(DISK, "7"));
    }
    assert_eq!(iscsi.get_target_disks(portal, iqn).await.unwrap(), [7]);
}

#[tokio::test]
async fn failures_carry_their_code_and_never_a_secret() {
    let network = network();
    let wmi = recorded(&network);
    let iscsi = HostIscsi::new(wmi.clone());
    let portal = &network.portal;
    iscsi.add_target_portal(portal).await.unwrap();
    let wrong = IscsiAuth::OneWayChap {
        username: "initiator".to_owned(),
        secret: Secret::new("a-wrong-chap-secret"),
    };
    match iscsi
        .connect_target(portal, network.targets[0].iqn, &wrong)
        .await
    {
        Err(Error::Host {
            operation,
            message,
            os_code,
            ..
        }) => {
            assert_eq!(operation, Operation::ConnectTarget);
            assert_eq!(os_code, Some(LOGON_FAILURE as i32));
            assert!(!message.contains("wrong-chap"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A portal that does not respond.
    let elsewhere = TargetPortal::new("10.0.0.99");
    match iscsi.add_target_portal(&elsewhere).await {
        Err(Error::Host { os_code, .. }) => assert_eq!(os_code, Some(NO_RESPONSE as i32)),
        other => panic!("{other:?}"),
    }
    // Anything against a portal not registered fails before any call.
    wmi.take_log();
    match iscsi.discover_target_portal(&elsewhere).await {
        Err(Error::Host { message, .. }) => assert!(message.contains("not registered")),
        other => panic!("{other:?}"),
    }
    assert_eq!(wmi.take_log().len(), 1);
}

#[tokio::test]
async fn a_portal_wmi_gives_without_a_port_is_an_error_not_a_guess() {
    let wmi = Arc::new(RecordedWmi::new(STORAGE).with_object(
        PORTAL,
        object([("TargetPortalAddress", text("10.0.0.5")), (PATH, text("p"))]),
    ));
    match HostIscsi::new(wmi).list_target_portals().await {
        Err(Error::Host { operation, .. }) => assert_eq!(operation, Operation::ListTargetPortals),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_input_is_refused_before_any_request() {
    let network = network();
    let wmi = recorded(&network);
    let proxy = super::through_handles(crate::Backends {
        iscsi: Some(Arc::new(HostIscsi::new(wmi.clone()))),
        ..crate::Backends::default()
    });
    let iscsi = proxy.iscsi().unwrap();
    let portal = &network.portal;
    let results = [
        iscsi
            .add_target_portal(&TargetPortal::new("10.0.0.5").with_port(0))
            .await,
        iscsi.connect_target(portal, " ", &IscsiAuth::None).await,
        iscsi.disconnect_target(portal, "").await,
        iscsi
            .connect_target(
                portal,
                "iqn.x",
                &IscsiAuth::OneWayChap {
                    username: "u".to_owned(),
                    secret: Secret::new(""),
                },
            )
            .await,
    ];
    for result in results {
        assert!(
            matches!(result, Err(Error::InvalidArgument { .. })),
            "{result:?}"
        );
    }
    assert!(wmi.take_log().is_empty());
}
