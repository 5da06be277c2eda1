//! The objects written from [`ManifestOptions`]: the CSIDriver, the
//! node's ServiceAccount and its DaemonSet, in either mode.

use super::*;

/// The manifests of a driver's node plugin: its CSIDriver, its node's
/// ServiceAccount, and its DaemonSet (the plugin, node-driver-registrar
/// and livenessprobe), as `options` say. The same options give the same
/// bytes.
///
/// This is the node half of a driver: its controller (with
/// external-attacher when `attachRequired` is true, and
/// external-provisioner) is the vendor's own deployment.
///
/// ```
/// use csi_proxy_client::csi::{render_manifests, ManifestOptions, VolumeKind};
///
/// let options = ManifestOptions::new("smb.example.com", "registry.example.com/smb-node", "1.2.0")
///     .kinds(&[VolumeKind::Smb])
///     .oldest_proxy((1, 1, 0));
/// let manifests = render_manifests(&options)?;
/// assert!(manifests.daemon_set.contains(r"\\.\pipe\csi-proxy-smb-v1"));
/// assert!(manifests.daemon_set.contains("registry.example.com/smb-node:1.2.0"));
/// assert!(manifests.csi_driver.contains("attachRequired: false"));
/// assert!(manifests.service_account.contains("automountServiceAccountToken: false"));
/// // `kubectl apply -f -` takes them all at once.
/// assert_eq!(manifests.to_string().matches("\n---\n").count(), 2);
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Configuration`] when the options cannot make a working pod:
/// no kinds, a fleet's oldest CSI Proxy that serves no version of a group
/// the kinds need ([`proxy_pipes`]), an empty driver name, image or tag,
/// an empty HostProcess command, a health port of 0, or kubelet's probe
/// timeout not longer than livenessprobe's.
pub fn render_manifests(options: &ManifestOptions) -> Result<Manifests> {
    validate(options)?;
    Ok(Manifests {
        csi_driver: csi_driver(options),
        service_account: service_account(options),
        daemon_set: daemon_set(options)?,
        host_process: options.host_process.is_some(),
    })
}

fn refuse(setting: &str, reason: &str) -> Error {
    Error::Configuration {
        setting: setting.to_owned(),
        reason: reason.to_owned(),
    }
}

fn validate(options: &ManifestOptions) -> Result<()> {
    for (setting, value) in [
        ("the driver's name", &options.driver_name),
        ("the image", &options.image),
        ("the image's tag", &options.tag),
        ("the app's name", &options.app_name),
        ("the namespace", &options.namespace),
    ] {
        if value.trim().is_empty() {
            return Err(refuse(setting, "empty"));
        }
    }
    if options.host_process.as_ref().is_some_and(Vec::is_empty) {
        return Err(refuse(
            "the HostProcess command",
            "empty: name the plugin's program",
        ));
    }
    if options.health_port == 0 {
        return Err(refuse("the health port", "0: pick a free port"));
    }
    let probe = options.probe;
    if probe.timeout_seconds <= probe.csi_timeout_seconds || probe.period_seconds == 0 {
        return Err(refuse(
            "the probe's timings",
            "kubelet's timeout must be longer than livenessprobe's, and the period not 0",
        ));
    }
    if probe.failure_threshold == 0 {
        return Err(refuse("the probe's timings", "a failure threshold of 0"));
    }
    Ok(())
}

fn attach_required(options: &ManifestOptions) -> bool {
    options.attach_required.unwrap_or_else(|| {
        options
            .kinds
            .iter()
            .any(|kind| matches!(kind, VolumeKind::Disk | VolumeKind::Iscsi))
    })
}

fn csi_driver(options: &ManifestOptions) -> String {
    let attach = attach_required(options);
    let attach_note = if attach {
        "The driver's controller attaches each disk (ControllerPublishVolume,\n\
         called by external-attacher in the controller's deployment) before\n\
         the node stages it; a share's publish answers at once."
    } else {
        "Shares only: nothing to attach, no external-attacher needed."
    };
    let spec = map()
        .noted(attach_note, "attachRequired", Node::Bool(attach))
        .with("podInfoOnMount", Node::Bool(false))
        .noted(
            "Persistent volumes only: the node service serves no inline ones.",
            "volumeLifecycleModes",
            strings(["Persistent"]),
        )
        .noted(
            "Windows has no POSIX owners to change for a pod's fsGroup.",
            "fsGroupPolicy",
            s("None"),
        )
        .done();
    let object = map()
        .with("apiVersion", s("storage.k8s.io/v1"))
        .with("kind", s("CSIDriver"))
        .with(
            "metadata",
            map().with("name", s(&options.driver_name)).done(),
        )
        .with("spec", spec)
        .done();
    yaml::document(
        &format!(
            "The CSIDriver of {}:\n\
             how kubelet and the attach controller treat its volumes.\n\
             Written by csi_proxy_client::csi::render_manifests.",
            options.driver_name
        ),
        &object,
    )
}

fn service_account(options: &ManifestOptions) -> String {
    let object = map()
        .with("apiVersion", s("v1"))
        .with("kind", s("ServiceAccount"))
        .with(
            "metadata",
            map()
                .with("name", s(&options.app_name))
                .with("namespace", s(&options.namespace))
                .done(),
        )
        .with("automountServiceAccountToken", Node::Bool(false))
        .done();
    yaml::document(
        "The node plugin's own identity: no role is bound to it and no token\n\
         is mounted (the plugin and its sidecars never call Kubernetes' API;\n\
         kubelet finds the plugin through its registration socket).",
        &object,
    )
}

/// The socket's folder and the endpoints, seen from the plugin, from the
/// sidecars and from the host.
struct Paths {
    /// The plugin's folder on the host, where kubelet dials the socket.
    host_dir: String,
    /// The endpoint the plugin and the sidecars use.
    endpoint: String,
}

fn paths(options: &ManifestOptions) -> Paths {
    let host_dir = format!(r"{KUBELET_DIR}\plugins\{}", options.driver_name);
    let endpoint = if options.host_process.is_some() {
        format!(r"unix://{host_dir}\csi.sock")
    } else {
        r"unix://C:\csi\csi.sock".to_owned()
    };
    Paths { host_dir, endpoint }
}

fn daemon_set(options: &ManifestOptions) -> Result<String> {
    let host_process = options.host_process.is_some();
    let name = if host_process {
        format!("{}-windows-hostprocess", options.app_name)
    } else {
        format!("{}-windows", options.app_name)
    };
    let pipes = if host_process {
        Vec::new()
    } else {
        proxy_pipes(&options.kinds, options.oldest_proxy)?
    };
    let paths = paths(options);
    let labels = map().with("app", s(&name)).done();
    let (major, minor, patch) = options.oldest_proxy;
    let mut metadata = map()
        .with("name", s(&name))
        .with("namespace", s(&options.namespace));
    if !host_process {
        metadata = metadata.noted(
            "The oldest CSI Proxy release on the fleet's nodes: the pipes mounted\n\
             are the ones csi_proxy_client::csi::proxy_pipes gives for it and the\n\
             plugin's kinds. A pipe a node's proxy lacks stops the pod's start:\n\
             upgrade every node's proxy before raising it.",
            "annotations",
            map()
                .with(
                    "csi-proxy-client.rs/oldest-csi-proxy",
                    s(format!("v{major}.{minor}.{patch}")),
                )
                .done(),
        );
    }
    let spec = map()
        .with("selector", map().with("matchLabels", labels.clone()).done())
        .with(
            "updateStrategy",
            map()
                .with("type", s("RollingUpdate"))
                .noted(
                    "One plugin per node at a time: a surge would start a second one on\n\
                     the same state folder, which the plugin refuses.",
                    "rollingUpdate",
                    map().with("maxUnavailable", Node::Int(1)).done(),
                )
                .done(),
        )
        .with(
            "template",
            map()
                .with("metadata", map().with("labels", labels).done())
                .with("spec", pod_spec(options, &paths, &pipes))
                .done(),
        )
        .done();
    let object = map()
        .with("apiVersion", s("apps/v1"))
        .with("kind", s("DaemonSet"))
        .with("metadata", metadata.done())
        .with("spec", spec)
        .done();
    let header = if host_process {
        format!(
            "The node plugin of {}\n\
             as a HostProcess pod: no CSI Proxy, the host's storage work done\n\
             in-process (a build with the feature csi-proxy-client/host-process,\n\
             started with --host), so no pipes; every container runs on the host\n\
             as SYSTEM and sees the host's paths. The plugin makes its socket's\n\
             folder itself, owner-only, before it binds.\n\
             Written by csi_proxy_client::csi::render_manifests.",
            options.driver_name
        )
    } else {
        format!(
            "The node plugin of {}\n\
             on Windows nodes that run CSI Proxy: the plugin reaches the proxy\n\
             through the pipes mounted below, beside node-driver-registrar (which\n\
             tells kubelet the plugin's socket) and livenessprobe (which calls\n\
             Probe for kubelet's liveness check).\n\
             Written by csi_proxy_client::csi::render_manifests.",
            options.driver_name
        )
    };
    Ok(yaml::document(&header, &object))
}

fn pod_spec(options: &ManifestOptions, paths: &Paths, pipes: &[String]) -> Node {
    let host_process = options.host_process.is_some();
    let selector = options
        .node_selector
        .iter()
        .fold(map(), |labels, (key, value)| labels.with(key, s(value)))
        .done();
    let tolerations = Node::List(options.tolerations.iter().map(Toleration::node).collect());
    let windows = if host_process {
        map()
            .with("hostProcess", Node::Bool(true))
            .with("runAsUserName", s(r"NT AUTHORITY\SYSTEM"))
            .done()
    } else {
        map()
            .noted(
                "Opening CSI Proxy's pipes needs an administrator.",
                "runAsUserName",
                s("ContainerAdministrator"),
            )
            .done()
    };
    let mut spec = map()
        .with("serviceAccountName", s(&options.app_name))
        .with("automountServiceAccountToken", Node::Bool(false))
        .with("nodeSelector", selector)
        .with("tolerations", tolerations)
        .with("priorityClassName", s("system-node-critical"));
    if host_process {
        spec = spec.noted(
            "HostProcess pods share the node's network: the health port must be\n\
             free on every node.",
            "hostNetwork",
            Node::Bool(true),
        );
    }
    spec = spec
        .with(
            "securityContext",
            map().with("windowsOptions", windows).done(),
        )
        .with(
            "containers",
            Node::List(vec![
                plugin_container(options, paths, pipes),
                registrar_container(options, paths),
                livenessprobe_container(options, paths),
            ]),
        );
    if !host_process {
        spec = spec.with("volumes", volumes(paths, pipes));
    }
    spec.done()
}

fn plugin_container(options: &ManifestOptions, paths: &Paths, pipes: &[String]) -> Node {
    let host_process = options.host_process.as_ref();
    let mut args = options.driver_args.clone();
    if host_process.is_some() {
        args.push("--host".into());
    }
    args.extend(["--endpoint", "$(CSI_ENDPOINT)", "--node-id", "$(NODE_NAME)"].map(str::to_owned));
    let env = Node::List(vec![
        map()
            .with("name", s("CSI_ENDPOINT"))
            .with("value", s(&paths.endpoint))
            .done(),
        map()
            .noted(
                "The node's name (inside a Windows container, COMPUTERNAME is the pod's).",
                "name",
                s("NODE_NAME"),
            )
            .with(
                "valueFrom",
                map()
                    .with(
                        "fieldRef",
                        map().with("fieldPath", s("spec.nodeName")).done(),
                    )
                    .done(),
            )
            .done(),
    ]);
    let port = if host_process.is_some() {
        Node::Int(i64::from(options.health_port))
    } else {
        s("healthz")
    };
    let probe = options.probe;
    let liveness = map()
        .with(
            "httpGet",
            map().with("path", s("/healthz")).with("port", port).done(),
        )
        .with(
            "initialDelaySeconds",
            Node::Int(probe.initial_delay_seconds.into()),
        )
        .with("timeoutSeconds", Node::Int(probe.timeout_seconds.into()))
        .with("periodSeconds", Node::Int(probe.period_seconds.into()))
        .with(
            "failureThreshold",
            Node::Int(probe.failure_threshold.into()),
        )
        .done();
    let mut container = map()
        .with("name", s("node-plugin"))
        .with("image", s(format!("{}:{}", options.image, options.tag)));
    container = match host_process {
        Some(command) => container.noted(
            "A HostProcess container's image files are in its working folder:\n\
             the program is started by its name.",
            "command",
            strings(command.iter().cloned()),
        ),
        None => container,
    };
    container = if host_process.is_some() {
        container.with("args", strings(args))
    } else {
        container.noted(
            "After the image's entrypoint (the plugin's program and its command).",
            "args",
            strings(args),
        )
    };
    container = container.with("env", env);
    if host_process.is_none() {
        container = container.with(
            "ports",
            Node::List(vec![map()
                .with("name", s("healthz"))
                .with("containerPort", Node::Int(options.health_port.into()))
                .with("protocol", s("TCP"))
                .done()]),
        );
    }
    container = container
        .noted(
            "Liveness: livenessprobe's /healthz, which calls the plugin's Probe.\n\
             Probe answers not ready while CSI Proxy is away; the timings let a\n\
             proxy upgrade pass without a restart (docs/operations.md).",
            "livenessProbe",
            liveness,
        )
        .with("resources", options.plugin_resources.node());
    if host_process.is_none() {
        let mut mounts = vec![
            map()
                .with("name", s("plugin-dir"))
                .with("mountPath", s(r"C:\csi"))
                .done(),
            map()
                .noted(
                    "Staging and pod paths, and the journal's folder\n\
                     (C:\\var\\lib\\kubelet\\plugins\\<driver>\\mounter).",
                    "name",
                    s("kubelet-dir"),
                )
                .with("mountPath", s(KUBELET_DIR))
                .done(),
        ];
        mounts.extend(pipes.iter().map(|pipe| {
            map()
                .with("name", s(pipe_volume_name(pipe)))
                .with("mountPath", s(pipe))
                .done()
        }));
        container = container.with("volumeMounts", Node::List(mounts));
    }
    container.done()
}

fn registrar_container(options: &ManifestOptions, paths: &Paths) -> Node {
    let mut container = map()
        .with("name", s("node-driver-registrar"))
        .with("image", s(&options.registrar_image));
    let mut args = vec![
        format!("--csi-address={}", paths.endpoint),
        format!(r"--kubelet-registration-path={}\csi.sock", paths.host_dir),
    ];
    if options.host_process.is_some() {
        container = container.with("command", strings(["csi-node-driver-registrar.exe"]));
        args.push(format!(
            r"--plugin-registration-path={KUBELET_DIR}\plugins_registry"
        ));
    }
    container = container
        .with("args", strings(args))
        .with("resources", options.registrar_resources.node());
    if options.host_process.is_none() {
        container = container.with(
            "volumeMounts",
            Node::List(vec![
                map()
                    .with("name", s("plugin-dir"))
                    .with("mountPath", s(r"C:\csi"))
                    .done(),
                map()
                    .with("name", s("registration-dir"))
                    .with("mountPath", s(r"C:\registration"))
                    .done(),
            ]),
        );
    }
    container.done()
}

fn livenessprobe_container(options: &ManifestOptions, paths: &Paths) -> Node {
    let mut container = map()
        .with("name", s("liveness-probe"))
        .with("image", s(&options.livenessprobe_image));
    if options.host_process.is_some() {
        container = container.with("command", strings(["livenessprobe.exe"]));
    }
    container = container
        .with(
            "args",
            strings([
                format!("--csi-address={}", paths.endpoint),
                format!("--probe-timeout={}s", options.probe.csi_timeout_seconds),
                format!("--health-port={}", options.health_port),
            ]),
        )
        .with("resources", options.livenessprobe_resources.node());
    if options.host_process.is_none() {
        container = container.with(
            "volumeMounts",
            Node::List(vec![map()
                .with("name", s("plugin-dir"))
                .with("mountPath", s(r"C:\csi"))
                .done()]),
        );
    }
    container.done()
}

/// `\\.\pipe\csi-proxy-disk-v1` as a volume's name: `csi-proxy-disk-v1`.
fn pipe_volume_name(pipe: &str) -> &str {
    pipe.rsplit('\\').next().unwrap_or(pipe)
}

fn host_path(name: &str, path: &str, kind: &str) -> Node {
    map()
        .with("name", s(name))
        .with(
            "hostPath",
            map().with("path", s(path)).with("type", s(kind)).done(),
        )
        .done()
}

fn volumes(paths: &Paths, pipes: &[String]) -> Node {
    let mut volumes = vec![
        host_path("plugin-dir", &paths.host_dir, "DirectoryOrCreate"),
        host_path(
            "registration-dir",
            &format!(r"{KUBELET_DIR}\plugins_registry"),
            "Directory",
        ),
        host_path("kubelet-dir", KUBELET_DIR, "Directory"),
    ];
    volumes.extend(
        pipes
            .iter()
            .map(|pipe| host_path(pipe_volume_name(pipe), pipe, "")),
    );
    Node::List(volumes)
}
