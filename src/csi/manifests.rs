//! A node plugin's Kubernetes manifests, written from options
//! ([`ManifestOptions`], [`render_manifests`]): the node half of a
//! driver's deployment, to pair with the vendor's own controller.

mod yaml;

use std::fmt;

use crate::{Error, Result};

use super::deployment::proxy_pipes;
use super::driver::VolumeKind;
use yaml::{map, s, strings, Node};

/// node-driver-registrar's image: a release kubernetes-csi publishes with
/// Windows images for Windows Server 2019 (`1809`) and 2022 (`ltsc2022`).
pub const NODE_DRIVER_REGISTRAR_IMAGE: &str =
    "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0";

/// livenessprobe's image: a release kubernetes-csi publishes with Windows
/// images for Windows Server 2019 (`1809`) and 2022 (`ltsc2022`).
pub const LIVENESSPROBE_IMAGE: &str = "registry.k8s.io/sig-storage/livenessprobe:v2.19.0";

/// The default port of livenessprobe's `/healthz`: not csi-driver-smb's
/// (29643), nor the other kubernetes-csi Windows drivers' (azuredisk
/// 29603, azurefile 29613, blob 29633, nfs 29653), since a HostProcess pod
/// shares its node's network with theirs.
pub const DEFAULT_HEALTH_PORT: u16 = 29661;

/// kubelet's folder on a Windows node.
const KUBELET_DIR: &str = r"C:\var\lib\kubelet";

/// A container's CPU and memory: what the scheduler reserves (requests)
/// and the most it may use (limits). Quantities are Kubernetes' (`10m`,
/// `40Mi`); a limit left out is no limit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resources {
    /// CPU requested, e.g. `10m`.
    pub cpu_request: String,
    /// Memory requested, e.g. `40Mi`.
    pub memory_request: String,
    /// The CPU limit, if any.
    pub cpu_limit: Option<String>,
    /// The memory limit, if any.
    pub memory_limit: Option<String>,
}

impl Resources {
    /// `cpu` and `memory` requested, no limit.
    pub fn requests(cpu: impl Into<String>, memory: impl Into<String>) -> Self {
        Self {
            cpu_request: cpu.into(),
            memory_request: memory.into(),
            cpu_limit: None,
            memory_limit: None,
        }
    }

    /// With a memory limit.
    #[must_use]
    pub fn memory_limit(mut self, memory: impl Into<String>) -> Self {
        self.memory_limit = Some(memory.into());
        self
    }

    /// With a CPU limit.
    #[must_use]
    pub fn cpu_limit(mut self, cpu: impl Into<String>) -> Self {
        self.cpu_limit = Some(cpu.into());
        self
    }

    fn node(&self) -> Node {
        let mut limits = map();
        if let Some(cpu) = &self.cpu_limit {
            limits = limits.with("cpu", s(cpu));
        }
        if let Some(memory) = &self.memory_limit {
            limits = limits.with("memory", s(memory));
        }
        let limits = limits.done();
        let has_limits = matches!(&limits, Node::Map(entries) if !entries.is_empty());
        let requests = map()
            .with("cpu", s(&self.cpu_request))
            .with("memory", s(&self.memory_request))
            .done();
        map()
            .maybe("limits", has_limits.then_some(limits))
            .with("requests", requests)
            .done()
    }
}

/// The timings of kubelet's liveness probe of the plugin (through
/// livenessprobe's `/healthz`, which calls the plugin's `Probe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeTimings {
    /// Seconds after the container starts before the first probe.
    pub initial_delay_seconds: u32,
    /// Seconds between probes.
    pub period_seconds: u32,
    /// kubelet's timeout of one probe, in seconds: more than
    /// `csi_timeout_seconds`, so that the sidecar answers first.
    pub timeout_seconds: u32,
    /// Failed probes in a row before kubelet restarts the plugin.
    pub failure_threshold: u32,
    /// livenessprobe's timeout of its `Probe` call (`--probe-timeout`).
    pub csi_timeout_seconds: u32,
}

impl Default for ProbeTimings {
    /// 60 s before the first probe, one every 30 s, 10 failures in a row
    /// (5 minutes) before a restart, `Probe` given 30 s and kubelet 40 s:
    /// a CSI Proxy upgrade, which makes `Probe` answer not ready for
    /// a minute or so, does not restart the plugin.
    fn default() -> Self {
        Self {
            initial_delay_seconds: 60,
            period_seconds: 30,
            timeout_seconds: 40,
            failure_threshold: 10,
            csi_timeout_seconds: 30,
        }
    }
}

/// A toleration of a node taint (`operator: Equal` with a value, or
/// `Exists` without one).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Toleration {
    /// The taint's key.
    pub key: String,
    /// The taint's value; none tolerates every value (`Exists`).
    pub value: Option<String>,
    /// The taint's effect (`NoSchedule`, `NoExecute`...); none, every effect.
    pub effect: Option<String>,
}

impl Toleration {
    /// A toleration of `key=value:effect`.
    pub fn equal(
        key: impl Into<String>,
        value: impl Into<String>,
        effect: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: Some(value.into()),
            effect: Some(effect.into()),
        }
    }

    /// A toleration of the taint `key`, whatever its value and effect.
    pub fn exists(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: None,
            effect: None,
        }
    }

    fn node(&self) -> Node {
        let operator = if self.value.is_some() {
            "Equal"
        } else {
            "Exists"
        };
        map()
            .with("key", s(&self.key))
            .with("operator", s(operator))
            .maybe("value", self.value.as_ref().map(s))
            .maybe("effect", self.effect.as_ref().map(s))
            .done()
    }
}

/// What [`render_manifests`] writes: a driver's node half, from its name,
/// its image and its kinds of volumes. Every other setting has a default,
/// given on its method.
///
/// Two modes: on nodes that run CSI Proxy (the default), the plugin in a
/// Windows container with the proxy's pipes mounted; or, with
/// [`host_process`](Self::host_process), a HostProcess pod that does the
/// host's storage work itself (a build with the `host-process` feature,
/// started with `--host`), with no pipes.
#[derive(Clone, Debug)]
pub struct ManifestOptions {
    driver_name: String,
    image: String,
    tag: String,
    kinds: Vec<VolumeKind>,
    driver_args: Vec<String>,
    host_process: Option<Vec<String>>,
    oldest_proxy: (u32, u32, u32),
    app_name: String,
    namespace: String,
    registrar_image: String,
    livenessprobe_image: String,
    plugin_resources: Resources,
    registrar_resources: Resources,
    livenessprobe_resources: Resources,
    probe: ProbeTimings,
    health_port: u16,
    node_selector: Vec<(String, String)>,
    tolerations: Vec<Toleration>,
    attach_required: Option<bool>,
}

impl ManifestOptions {
    /// The manifests of the driver `driver_name` (the name its
    /// `GetPluginInfo` answers), whose plugin image is `image:tag`
    /// (for a HostProcess pod, its HostProcess image).
    pub fn new(
        driver_name: impl Into<String>,
        image: impl Into<String>,
        tag: impl Into<String>,
    ) -> Self {
        Self {
            driver_name: driver_name.into(),
            image: image.into(),
            tag: tag.into(),
            kinds: vec![VolumeKind::Disk],
            driver_args: Vec::new(),
            host_process: None,
            oldest_proxy: (1, 0, 0),
            app_name: "csi-node-plugin".into(),
            namespace: "kube-system".into(),
            registrar_image: NODE_DRIVER_REGISTRAR_IMAGE.into(),
            livenessprobe_image: LIVENESSPROBE_IMAGE.into(),
            plugin_resources: Resources::requests("10m", "40Mi").memory_limit("400Mi"),
            registrar_resources: Resources::requests("10m", "20Mi").memory_limit("100Mi"),
            livenessprobe_resources: Resources::requests("10m", "20Mi").memory_limit("100Mi"),
            probe: ProbeTimings::default(),
            health_port: DEFAULT_HEALTH_PORT,
            node_selector: vec![("kubernetes.io/os".into(), "windows".into())],
            tolerations: vec![Toleration::equal(
                "node.kubernetes.io/os",
                "windows",
                "NoSchedule",
            )],
            attach_required: None,
        }
    }

    /// The kinds of volumes the plugin serves (default: disks): they
    /// choose the pipes mounted ([`proxy_pipes`]) and `attachRequired`.
    #[must_use]
    pub fn kinds(mut self, kinds: &[VolumeKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// The driver's own flags, put before the library's (`--endpoint`,
    /// `--node-id`, `--host`) in the plugin's arguments (default: none).
    #[must_use]
    pub fn driver_args<I, T>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.driver_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// A HostProcess pod, whose plugin container runs `command` (the
    /// program by its name, then its own words before the arguments: a
    /// HostProcess container's image files are in its working folder).
    /// Default: a Windows container on nodes with CSI Proxy, run by the
    /// image's entrypoint.
    #[must_use]
    pub fn host_process<I, T>(mut self, command: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.host_process = Some(command.into_iter().map(Into::into).collect());
        self
    }

    /// The oldest CSI Proxy release on the fleet's nodes (default: v1.0.0):
    /// the pipes mounted are the ones [`proxy_pipes`] gives for it.
    #[must_use]
    pub fn oldest_proxy(mut self, release: (u32, u32, u32)) -> Self {
        self.oldest_proxy = release;
        self
    }

    /// The name of the ServiceAccount and the prefix of the DaemonSet's
    /// (`<name>-windows`, `<name>-windows-hostprocess`); default
    /// `csi-node-plugin`.
    #[must_use]
    pub fn app_name(mut self, name: impl Into<String>) -> Self {
        self.app_name = name.into();
        self
    }

    /// The namespace (default `kube-system`).
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The sidecars' images (default [`NODE_DRIVER_REGISTRAR_IMAGE`] and
    /// [`LIVENESSPROBE_IMAGE`]), e.g. from a mirror.
    #[must_use]
    pub fn sidecar_images(
        mut self,
        registrar: impl Into<String>,
        livenessprobe: impl Into<String>,
    ) -> Self {
        self.registrar_image = registrar.into();
        self.livenessprobe_image = livenessprobe.into();
        self
    }

    /// The plugin container's resources (default: requests 10m CPU and
    /// 40Mi, memory limit 400Mi).
    #[must_use]
    pub fn plugin_resources(mut self, resources: Resources) -> Self {
        self.plugin_resources = resources;
        self
    }

    /// node-driver-registrar's resources (default: requests 10m CPU and
    /// 20Mi, memory limit 100Mi).
    #[must_use]
    pub fn registrar_resources(mut self, resources: Resources) -> Self {
        self.registrar_resources = resources;
        self
    }

    /// livenessprobe's resources (default: requests 10m CPU and 20Mi,
    /// memory limit 100Mi).
    #[must_use]
    pub fn livenessprobe_resources(mut self, resources: Resources) -> Self {
        self.livenessprobe_resources = resources;
        self
    }

    /// The liveness probe's timings (default [`ProbeTimings::default`]).
    #[must_use]
    pub fn probe(mut self, timings: ProbeTimings) -> Self {
        self.probe = timings;
        self
    }

    /// The port of livenessprobe's `/healthz` (default
    /// [`DEFAULT_HEALTH_PORT`]). A HostProcess pod shares the node's
    /// network: the port must be free on every node.
    #[must_use]
    pub fn health_port(mut self, port: u16) -> Self {
        self.health_port = port;
        self
    }

    /// The pod's node selector (default `kubernetes.io/os: windows`).
    #[must_use]
    pub fn node_selector(mut self, labels: &[(&str, &str)]) -> Self {
        self.node_selector = labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        self
    }

    /// The pod's tolerations (default: `node.kubernetes.io/os=windows:NoSchedule`,
    /// the taint Windows node pools often carry).
    #[must_use]
    pub fn tolerations(mut self, tolerations: Vec<Toleration>) -> Self {
        self.tolerations = tolerations;
        self
    }

    /// The CSIDriver's `attachRequired`. Default: true when the kinds
    /// include disks or iSCSI (the controller attaches a disk, and gives
    /// its LUN in the publish context, before the node stages it), false
    /// for shares alone (nothing to attach).
    #[must_use]
    pub fn attach_required(mut self, required: bool) -> Self {
        self.attach_required = Some(required);
        self
    }
}

/// The manifests [`render_manifests`] wrote, one YAML document each.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Manifests {
    /// The CSIDriver object.
    pub csi_driver: String,
    /// The node's ServiceAccount: no token mounted, no role bound (neither
    /// the plugin nor its sidecars call Kubernetes' API).
    pub service_account: String,
    /// The DaemonSet.
    pub daemon_set: String,
    host_process: bool,
}

impl Manifests {
    /// Each manifest with the name of its file in the kit's `deploy/`:
    /// `csidriver.yaml`, `serviceaccount.yaml`, then `node-windows.yaml`
    /// or `node-windows-hostprocess.yaml`.
    pub fn files(&self) -> Vec<(&'static str, &str)> {
        let daemon_set = if self.host_process {
            "node-windows-hostprocess.yaml"
        } else {
            "node-windows.yaml"
        };
        vec![
            ("csidriver.yaml", self.csi_driver.as_str()),
            ("serviceaccount.yaml", self.service_account.as_str()),
            (daemon_set, self.daemon_set.as_str()),
        ]
    }
}

impl fmt::Display for Manifests {
    /// Every manifest in one stream, `---` between them: what
    /// `kubectl apply -f -` takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let documents = [&self.csi_driver, &self.service_account, &self.daemon_set];
        for (at, document) in documents.into_iter().enumerate() {
            if at > 0 {
                f.write_str("---\n")?;
            }
            f.write_str(document)?;
        }
        Ok(())
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_cannot_make_a_working_pod_are_refused() {
        let base = || ManifestOptions::new("d.example.com", "r/i", "1");
        assert!(render_manifests(&base()).is_ok());
        assert!(render_manifests(&base().kinds(&[])).is_err());
        assert!(render_manifests(&ManifestOptions::new("", "r/i", "1")).is_err());
        assert!(render_manifests(&base().health_port(0)).is_err());
        let empty: [&str; 0] = [];
        assert!(render_manifests(&base().host_process(empty)).is_err());
        let mut timings = ProbeTimings::default();
        timings.timeout_seconds = timings.csi_timeout_seconds;
        assert!(render_manifests(&base().probe(timings)).is_err());
        let iscsi = base().kinds(&[VolumeKind::Iscsi]).oldest_proxy((0, 2, 1));
        assert!(render_manifests(&iscsi).is_err());
        // A HostProcess pod mounts no pipe, whatever the release.
        assert!(render_manifests(&iscsi.host_process(["p.exe"])).is_ok());
    }

    #[test]
    fn the_same_options_give_the_same_bytes_and_names_are_quoted_safely() {
        let options = ManifestOptions::new("d.example.com", "r/i", "0.1")
            .node_selector(&[("pool", "yes")])
            .driver_args(["--note", "a: b"]);
        let first = render_manifests(&options).unwrap();
        assert_eq!(first, render_manifests(&options).unwrap());
        assert!(first.daemon_set.contains("image: r/i:0.1\n"));
        assert!(first.daemon_set.contains("pool: \"yes\"\n"));
        assert!(first.daemon_set.contains("- \"a: b\"\n"));
    }

    #[test]
    fn each_container_gets_its_own_resources() {
        let options = ManifestOptions::new("d.example.com", "r/i", "1")
            .plugin_resources(Resources::requests("100m", "1Mi").cpu_limit("2"))
            .registrar_resources(Resources::requests("200m", "2Mi"))
            .livenessprobe_resources(Resources::requests("300m", "3Mi").memory_limit("9Mi"));
        let text = render_manifests(&options).unwrap().daemon_set;
        let plugin = text.find("name: node-plugin").unwrap();
        let registrar = text.find("name: node-driver-registrar").unwrap();
        let probe = text.find("name: liveness-probe").unwrap();
        let at = |words: &str| text.find(words).unwrap();
        assert!((plugin..registrar).contains(&at("cpu: \"100m\"")));
        assert!((plugin..registrar).contains(&at("cpu: \"2\"")));
        assert!((registrar..probe).contains(&at("cpu: \"200m\"")));
        assert!(at("cpu: \"300m\"") > probe && at("memory: \"9Mi\"") > probe);
    }
}
