//! A node plugin's Kubernetes manifests, written from options
//! ([`ManifestOptions`], [`render_manifests`]): the node half of a
//! driver's deployment, to pair with the vendor's own controller.

mod render;
mod yaml;

pub use render::render_manifests;

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

#[cfg(test)]
mod tests;
