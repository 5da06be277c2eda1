//! Whatever a proxy answers, to any operation at any wire version, the SDK
//! returns a value or a typed error: never a panic. The answer is the fuzz
//! input, sent back by a scripted gRPC server over a real Unix socket.

#![no_main]

use std::sync::OnceLock;

use csi_proxy_client::testing::{sample, ScriptedServer};
use csi_proxy_client::{ApiGroup, CsiProxy, Error, Operation};
use libfuzzer_sys::fuzz_target;

struct Endpoint {
    raw: ScriptedServer,
    proxy: CsiProxy,
    operations: Vec<Operation>,
}

struct State {
    runtime: tokio::runtime::Runtime,
    endpoints: Vec<Endpoint>,
    _dir: tempfile::TempDir,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let transport = csi_proxy_client::transport::Transport::unix_sockets(dir.path()).unwrap();
        let endpoints = runtime.block_on(async {
            let mut endpoints = Vec::new();
            for group in ApiGroup::ALL {
                for &version in group.versions() {
                    let raw = ScriptedServer::start(&transport, group, version)
                        .await
                        .unwrap();
                    let proxy = CsiProxy::builder()
                        .transport(transport.clone())
                        .policy(
                            csi_proxy_client::negotiate::VersionPolicy::default()
                                .pin(group, version),
                        )
                        .groups([group])
                        .connect()
                        .await
                        .unwrap();
                    let operations = Operation::of_group(group).collect();
                    endpoints.push(Endpoint {
                        raw,
                        proxy,
                        operations,
                    });
                }
            }
            endpoints
        });
        State {
            runtime,
            endpoints,
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let [which, op, answer @ ..] = data else {
        return;
    };
    let state = state();
    let endpoint = &state.endpoints[*which as usize % state.endpoints.len()];
    let operation = endpoint.operations[*op as usize % endpoint.operations.len()];
    endpoint.raw.reply_bytes(answer);
    let result = state
        .runtime
        .block_on(sample::call(&endpoint.proxy, operation));
    match result {
        Ok(())
        | Err(Error::InvalidResponse { .. })
        | Err(Error::Host { .. })
        | Err(Error::Unsupported { .. })
        | Err(Error::NotFound { .. }) => {}
        Err(other) => panic!("{operation:?}: unexpected {other:?}"),
    }
});
