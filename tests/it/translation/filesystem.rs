//! Filesystem: the path context of the old versions, where force goes,
//! the legacy error field, and symlinks, whose two paths of one type only
//! a scripted server tells apart.

use super::pinned;
use csi_proxy_client::api::WindowsPath;
use csi_proxy_client::testing::sample::{path, pod_path};
use csi_proxy_client::{wire, ApiGroup::Filesystem, ApiVersion as V, Code, Error};
use prost::Message;

#[tokio::test]
async fn old_filesystem_requests_carry_the_path_context() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1BETA1).await;
    let fs = proxy.filesystem().unwrap();
    fs.rmdir(&pod_path(), true).await.unwrap();
    fs.mkdir(&path()).await.unwrap();
    let sent = raw.requests();

    assert_eq!(sent[0].path, "/v1beta1.Filesystem/Rmdir");
    let rmdir = wire::filesystem::v1beta1::RmdirRequest::decode(&sent[0].body[..]).unwrap();
    assert_eq!(rmdir.path, pod_path().as_str());
    assert_eq!(
        rmdir.context,
        wire::filesystem::v1beta1::PathContext::Pod as i32
    );
    assert!(rmdir.force);
    assert!(
        sent[0].body.ends_with(&[0x10, 0x01, 0x18, 0x01]),
        "context 2 = POD, force 3 = true"
    );

    let mkdir = wire::filesystem::v1beta1::MkdirRequest::decode(&sent[1].body[..]).unwrap();
    assert_eq!(
        mkdir.context,
        wire::filesystem::v1beta1::PathContext::Plugin as i32
    );
}

#[tokio::test]
async fn only_the_kubelet_pods_directory_makes_a_pod_path() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1ALPHA1).await;
    let fs = proxy.filesystem().unwrap();
    // A static volume named `pods` under the plugins directory.
    let plugin_pods = WindowsPath::new(r"C:\var\lib\kubelet\plugins\drv\pods\v").unwrap();
    fs.mkdir(&plugin_pods).await.unwrap();
    fs.mkdir(&WindowsPath::new(r"c:\Var\Lib\Kubelet\Pods\uid\v").unwrap())
        .await
        .unwrap();
    let contexts: Vec<i32> = raw
        .requests()
        .iter()
        .map(|r| wire::filesystem::v1alpha1::MkdirRequest::decode(&r.body[..]).unwrap())
        .map(|mkdir| mkdir.context)
        .collect();
    use wire::filesystem::v1alpha1::PathContext;
    assert_eq!(
        contexts,
        [PathContext::Plugin as i32, PathContext::Pod as i32]
    );
}

#[tokio::test]
async fn new_filesystem_requests_put_force_in_field_2() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1).await;
    proxy
        .filesystem()
        .unwrap()
        .rmdir(&path(), true)
        .await
        .unwrap();
    let sent = raw.only_request();
    let rmdir = wire::filesystem::v1::RmdirRequest::decode(&sent.body[..]).unwrap();
    assert!(rmdir.force);
    assert!(sent.body.ends_with(&[0x10, 0x01]));
}

#[tokio::test]
async fn the_legacy_error_field_is_a_failure() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1ALPHA1).await;
    let fs = proxy.filesystem().unwrap();
    raw.reply(wire::filesystem::v1alpha1::PathExistsResponse {
        error: String::new(),
        exists: true,
    });
    assert!(fs.path_exists(&path()).await.unwrap());
    raw.reply(wire::filesystem::v1alpha1::PathExistsResponse {
        error: "access denied".into(),
        exists: true,
    });
    match fs.path_exists(&path()).await {
        Err(Error::Host {
            code: Code::Unknown,
            message,
            ..
        }) => assert_eq!(message, "access denied"),
        other => panic!("{other:?}"),
    }
    raw.reply(wire::filesystem::v1alpha1::MkdirResponse {
        error: "exists".into(),
    });
    assert!(matches!(fs.mkdir(&path()).await, Err(Error::Host { .. })));
    raw.reply(wire::filesystem::v1alpha1::IsMountPointResponse {
        error: String::new(),
        is_mount_point: true,
    });
    assert!(fs.is_symlink(&path()).await.unwrap());
}

#[tokio::test]
async fn symlinks_are_link_path_and_is_mount_point_before_v1beta2() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V1BETA1).await;
    let fs = proxy.filesystem().unwrap();
    fs.create_symlink(&path(), &pod_path()).await.unwrap();
    fs.is_symlink(&pod_path()).await.unwrap();
    let sent = raw.requests();
    assert_eq!(sent[0].path, "/v1beta1.Filesystem/LinkPath");
    let link = wire::filesystem::v1beta1::LinkPathRequest::decode(&sent[0].body[..]).unwrap();
    // The new link is target_path; the existing directory is source_path.
    assert_eq!(
        (link.source_path.as_str(), link.target_path.as_str()),
        (path().as_str(), pod_path().as_str())
    );
    assert_eq!(sent[1].path, "/v1beta1.Filesystem/IsMountPoint");
}

#[tokio::test]
async fn new_symlink_requests_name_the_link_and_its_target_apart() {
    for version in [V::V1BETA2, V::V1, V::V2ALPHA1] {
        let (_node, raw, proxy) = pinned(Filesystem, version).await;
        let fs = proxy.filesystem().unwrap();
        fs.create_symlink(&path(), &pod_path()).await.unwrap();
        let sent = raw.only_request();
        assert_eq!(sent.path, format!("/{version}.Filesystem/CreateSymlink"));
        let link =
            wire::filesystem::v2alpha1::CreateSymlinkRequest::decode(&sent.body[..]).unwrap();
        // The new link is target_path; the existing directory is source_path.
        assert_eq!(
            (link.source_path.as_str(), link.target_path.as_str()),
            (path().as_str(), pod_path().as_str()),
            "{version}"
        );
    }
}

#[tokio::test]
async fn rmdir_contents_is_only_on_v2alpha1() {
    let (_node, raw, proxy) = pinned(Filesystem, V::V2ALPHA1).await;
    proxy
        .filesystem()
        .unwrap()
        .rmdir_contents(&path())
        .await
        .unwrap();
    assert_eq!(
        raw.only_request().path,
        "/v2alpha1.Filesystem/RmdirContents"
    );
}
