//! What is sent again and what is not: a call certainly not sent goes on
//! the new connection, a mutation cut off by a crash is not repeated unless
//! its caller opts in, and the host's own failures are final.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use super::serving;
use crate::common::node::FakeNode;
use crate::common::slow::slow_volume_node;
use crate::common::wait_until;
use csi_proxy_client::testing::sample::volume;
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{ApiGroup, ApiVersion as V, CallOptions, Error, Result, RetryPolicy};

#[tokio::test]
async fn a_call_that_was_certainly_not_sent_goes_on_the_new_connection_without_retries() {
    let mut node = FakeNode::serving([(ApiGroup::Disk, V::V1)]).await;
    let proxy = node
        .client_builder()
        .retry(RetryPolicy::none())
        .connect()
        .await
        .unwrap();
    proxy.disk().unwrap().list_disk_ids().await.unwrap();
    node.fake.stop_all().await;
    // The old connection has ended: what is sent now was certainly not
    // sent on it. Even a mutation goes, on the new connection.
    wait_until("the connection ended", || {
        proxy.version(ApiGroup::Disk).is_none()
    })
    .await;
    node.fake.serve(ApiGroup::Disk, V::V1).await.unwrap();
    node.fake.clear_calls();
    proxy.disk().unwrap().rescan().await.unwrap();
    let calls = node.fake.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].rpc, "Rescan");
}

/// Starts `call` and kills the proxy once the backend got it.
async fn kill_during<T: Send + 'static>(
    fake: &Mutex<Option<FakeProxy>>,
    backend_saw: impl Fn() -> usize,
    call: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let task = tokio::spawn(call);
    wait_until("the call arrived", || backend_saw() != 0).await;
    let mut proxy = fake.lock().unwrap().take().unwrap();
    proxy.restart([(ApiGroup::Volume, V::V1)]).await.unwrap();
    *fake.lock().unwrap() = Some(proxy);
    task.await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_cut_off_by_a_crash_is_not_sent_again() {
    let (backend, node) = slow_volume_node(300).await;
    let proxy = node.client().await;
    let fake = Mutex::new(Some(node.fake));

    // A mutation in flight when the proxy dies fails, and is not repeated.
    let volumes = proxy.volume().unwrap();
    let result = kill_during(
        &fake,
        || backend.formats.load(Ordering::SeqCst),
        async move { volumes.format_volume(&volume()).await },
    )
    .await;
    assert!(
        matches!(
            result,
            Err(Error::Transport {
                maybe_sent: true,
                ..
            })
        ),
        "{result:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        backend.formats.load(Ordering::SeqCst),
        1,
        "the format was sent twice"
    );
    let calls = fake.lock().unwrap().as_ref().unwrap().calls();
    assert_eq!(calls.iter().filter(|c| c.rpc == "FormatVolume").count(), 1);

    // A read cut off the same way is retried on the new connection.
    let volumes = proxy.volume().unwrap();
    let stats = kill_during(&fake, || backend.stats.load(Ordering::SeqCst), async move {
        volumes.get_volume_stats(&volume()).await
    })
    .await
    .unwrap();
    assert_eq!(stats.total_bytes, 10);
    assert_eq!(backend.stats.load(Ordering::SeqCst), 2);

    // And a mutation is retried when the caller opts in.
    backend.formats.store(0, Ordering::SeqCst);
    let volumes = proxy
        .with_call_options(CallOptions::default().retry_mutations(true))
        .volume()
        .unwrap();
    kill_during(
        &fake,
        || backend.formats.load(Ordering::SeqCst),
        async move { volumes.format_volume(&volume()).await },
    )
    .await
    .unwrap();
    assert_eq!(backend.formats.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn host_failures_are_never_retried() {
    let (node, proxy) = serving(ApiGroup::System, V::V1ALPHA1).await;
    let err = proxy
        .system()
        .unwrap()
        .get_service("no-such-service")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Host {
                code: csi_proxy_client::Code::Unknown,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(node.fake.calls().len(), 1, "an Unknown answer is final");
}
