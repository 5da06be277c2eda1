//! The deployment kit (`deploy/`) held to the plugin it deploys: each
//! DaemonSet's arguments, after the image's entrypoint (`deploy/Dockerfile`),
//! are flags the example plugin's parser takes; the sidecars talk to the
//! socket the plugin serves; the pipes mounted are the ones
//! `csi::proxy_pipes` gives for the plugin's kinds and the oldest CSI Proxy
//! the manifest names, and nothing else; the CSIDriver names the driver.
//! CI validates the same files against Kubernetes' schemas
//! (`kubernetes-validate`, in `.ci/run`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use csi_proxy_client::csi::{proxy_pipes, NodeDriver, NodePlugin, ServeError, VolumeKind};
use yaml_rust2::{Yaml, YamlLoader};

use crate::node_plugin::driver::{ExampleDriver, DRIVER_NAME};

/// The one document of `deploy/<file>`.
fn manifest(file: &str) -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut documents = YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(documents.len(), 1, "{file}: one object");
    documents.remove(0)
}

/// `node` as a string (empty when it is none).
fn text(node: &Yaml) -> &str {
    node.as_str().unwrap_or_default()
}

/// The strings of a list (none when it is not one).
fn strings(node: &Yaml) -> Vec<String> {
    let list = node.as_vec().map(Vec::as_slice).unwrap_or_default();
    list.iter().map(|item| text(item).to_owned()).collect()
}

/// The container `name` of a DaemonSet.
fn container<'a>(daemon_set: &'a Yaml, name: &str) -> &'a Yaml {
    let containers = daemon_set["spec"]["template"]["spec"]["containers"].as_vec();
    let found = containers.and_then(|c| c.iter().find(|c| text(&c["name"]) == name));
    found.unwrap_or_else(|| panic!("no container {name}"))
}

/// The arguments the image's entrypoint puts before the manifest's:
/// `deploy/Dockerfile`'s `ENTRYPOINT`, without the program.
fn entrypoint_args() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Dockerfile");
    let dockerfile = std::fs::read_to_string(path).unwrap();
    let line = dockerfile.lines().find(|l| l.starts_with("ENTRYPOINT ["));
    let list = line.expect("an ENTRYPOINT in exec form")["ENTRYPOINT ".len()..].trim();
    let words: Vec<String> = list
        .trim_matches(['[', ']'])
        .split(',')
        .map(|word| word.trim().trim_matches('"').to_owned())
        .collect();
    assert!(words[0].ends_with("node_plugin.exe"), "{words:?}");
    words[1..].to_vec()
}

/// The plugin container's command line as the node runs it: the
/// container's `command` (else the image's entrypoint) without the
/// program, then its `args`, `$(VAR)` replaced as Kubernetes does from the
/// container's `env` (a field reference by a node's name).
fn plugin_command_line(daemon_set: &Yaml) -> Vec<String> {
    let plugin = container(daemon_set, "node-plugin");
    let command = strings(&plugin["command"]);
    let before = match command.split_first() {
        Some((program, rest)) => {
            assert_eq!(program, "node_plugin.exe", "started by its name");
            rest.to_vec()
        }
        None => entrypoint_args(),
    };
    let mut env = HashMap::new();
    for variable in plugin["env"].as_vec().unwrap() {
        let value = match &variable["value"] {
            Yaml::String(value) => value.clone(),
            _ => "node-1".to_owned(),
        };
        env.insert(format!("$({})", text(&variable["name"])), value);
    }
    let args = strings(&plugin["args"]).into_iter();
    let args = args.map(|arg| env.get(&arg).cloned().unwrap_or(arg));
    before.into_iter().chain(args).collect()
}

/// The kinds the plugin serves and the library's flags, from a command
/// line read as the example's `main` reads it (`serve`, `--kind`, then
/// the library's), which the plugin must take.
fn parse(command_line: &[String]) -> (Vec<VolumeKind>, Vec<String>) {
    assert_eq!(command_line[0], "serve", "the example's command");
    let mut args = command_line[1..].to_vec();
    let driver = ExampleDriver::from_args(&mut args).unwrap();
    let kinds = driver.kinds().to_vec();
    if let Err(error) = NodePlugin::new(driver).args(args.clone()) {
        panic!("the plugin refuses {args:?}: {error}");
    }
    (kinds, args)
}

/// The value of `--flag=value` among `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let prefix = format!("{flag}=");
    let found = args.iter().find_map(|arg| arg.strip_prefix(&prefix));
    found.unwrap_or_else(|| panic!("no {flag} in {args:?}"))
}

/// The value after `--flag` among `args`.
fn value_after<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at = args.iter().position(|arg| arg == flag);
    &args[at.unwrap_or_else(|| panic!("no {flag} in {args:?}")) + 1]
}

/// The pipes among a DaemonSet's volumes, and the plugin's mounts of them.
fn pipes(daemon_set: &Yaml) -> (BTreeSet<String>, BTreeSet<String>) {
    let spec = &daemon_set["spec"]["template"]["spec"];
    let volumes = spec["volumes"]
        .as_vec()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut by_name = HashMap::new();
    let mut mounted_pipes = BTreeSet::new();
    for volume in volumes {
        let path = text(&volume["hostPath"]["path"]);
        if path.starts_with(r"\\.\pipe\") {
            assert_eq!(text(&volume["hostPath"]["type"]), "", "{path}: type \"\"");
            by_name.insert(text(&volume["name"]).to_owned(), path.to_owned());
            mounted_pipes.insert(path.to_owned());
        }
    }
    let mut in_plugin = BTreeSet::new();
    let mounts = container(daemon_set, "node-plugin")["volumeMounts"].as_vec();
    for mount in mounts.map(Vec::as_slice).unwrap_or_default() {
        if let Some(pipe) = by_name.get(text(&mount["name"])) {
            assert_eq!(text(&mount["mountPath"]), pipe, "a pipe at its own path");
            in_plugin.insert(pipe.clone());
        }
    }
    (mounted_pipes, in_plugin)
}

/// `v1.2.3` as (1, 2, 3).
fn release(text: &str) -> (u32, u32, u32) {
    let parts: Vec<u32> = (text.strip_prefix('v').unwrap().split('.'))
        .map(|part| part.parse().unwrap())
        .collect();
    (parts[0], parts[1], parts[2])
}

#[test]
fn the_daemon_set_runs_the_plugin_with_its_flags_and_the_pipes_its_kinds_need() {
    let daemon_set = manifest("node-windows.yaml");
    assert_eq!(text(&daemon_set["kind"]), "DaemonSet");
    let spec = &daemon_set["spec"]["template"]["spec"];
    assert_eq!(text(&spec["nodeSelector"]["kubernetes.io/os"]), "windows");
    let user = &spec["securityContext"]["windowsOptions"]["runAsUserName"];
    assert_eq!(
        text(user),
        "ContainerAdministrator",
        "the pipes need an administrator"
    );

    let (kinds, args) = parse(&plugin_command_line(&daemon_set));
    let endpoint = value_after(&args, "--endpoint");
    assert!(!args.iter().any(|arg| arg == "--host"), "through CSI Proxy");
    // The sidecars reach the socket the plugin serves, as kubelet does.
    let registrar = strings(&container(&daemon_set, "node-driver-registrar")["args"]);
    assert_eq!(flag(&registrar, "--csi-address"), endpoint);
    let registration = flag(&registrar, "--kubelet-registration-path");
    assert_eq!(
        registration,
        format!(r"C:\var\lib\kubelet\plugins\{DRIVER_NAME}\csi.sock")
    );
    // ... which is the socket the plugin serves, seen from the host.
    let volumes = daemon_set["spec"]["template"]["spec"]["volumes"]
        .as_vec()
        .unwrap();
    let plugin_dir = volumes
        .iter()
        .find(|v| text(&v["name"]) == "plugin-dir")
        .unwrap();
    let socket_name = endpoint.rsplit('\\').next().unwrap();
    assert_eq!(
        registration,
        format!(r"{}\{socket_name}", text(&plugin_dir["hostPath"]["path"]))
    );
    let probe = strings(&container(&daemon_set, "liveness-probe")["args"]);
    assert_eq!(flag(&probe, "--csi-address"), endpoint);
    let plugin = container(&daemon_set, "node-plugin");
    let port = plugin["ports"][0]["containerPort"].as_i64().unwrap();
    assert_eq!(flag(&probe, "--health-port"), port.to_string());
    assert_eq!(
        text(&plugin["livenessProbe"]["httpGet"]["path"]),
        "/healthz"
    );

    // The pipes: the rule's, for the kinds the plugin serves.
    let annotations = &daemon_set["metadata"]["annotations"];
    let oldest = release(text(&annotations["csi-proxy-client.rs/oldest-csi-proxy"]));
    let expected: BTreeSet<String> = proxy_pipes(&kinds, oldest).unwrap().into_iter().collect();
    let (volumes, mounted) = pipes(&daemon_set);
    assert_eq!(
        volumes, expected,
        "the pipes of {kinds:?} from CSI Proxy {oldest:?}"
    );
    assert_eq!(mounted, expected, "each mounted in the plugin's container");
}

#[test]
fn the_host_process_variant_runs_the_host_backend_and_mounts_no_pipe() {
    let daemon_set = manifest("node-windows-hostprocess.yaml");
    let spec = &daemon_set["spec"]["template"]["spec"];
    let windows = &spec["securityContext"]["windowsOptions"];
    assert_eq!(windows["hostProcess"].as_bool(), Some(true));
    assert_eq!(text(&windows["runAsUserName"]), r"NT AUTHORITY\SYSTEM");
    assert_eq!(spec["hostNetwork"].as_bool(), Some(true));
    let (_, args) = parse(&plugin_command_line(&daemon_set));
    assert!(args.iter().any(|arg| arg == "--host"), "{args:?}");
    let endpoint = value_after(&args, "--endpoint");
    assert_eq!(
        endpoint,
        format!(r"unix://C:\var\lib\kubelet\plugins\{DRIVER_NAME}\csi.sock")
    );
    let registrar = strings(&container(&daemon_set, "node-driver-registrar")["args"]);
    assert_eq!(flag(&registrar, "--csi-address"), endpoint);
    let probe = strings(&container(&daemon_set, "liveness-probe")["args"]);
    assert_eq!(flag(&probe, "--csi-address"), endpoint);
    let (volumes, _) = pipes(&daemon_set);
    assert!(volumes.is_empty(), "no proxy, no pipes: {volumes:?}");
}

#[test]
fn the_csi_driver_object_names_the_driver() {
    let driver = manifest("csidriver.yaml");
    assert_eq!(text(&driver["kind"]), "CSIDriver");
    assert_eq!(text(&driver["metadata"]["name"]), DRIVER_NAME);
    // Disks are attached by the controller before the node stages them.
    assert_eq!(driver["spec"]["attachRequired"].as_bool(), Some(true));
}

/// The check above is a check: a flag the plugin does not know fails it.
#[test]
fn an_unknown_flag_in_a_manifest_would_fail() {
    let args = ["--endpoint", "unix://C:\\csi\\csi.sock", "--nodeid", "n"].map(str::to_owned);
    let refused = NodePlugin::new(ExampleDriver::of_kind("disk").unwrap()).args(args);
    assert!(matches!(refused, Err(ServeError::Usage(text)) if text.contains("--nodeid")));
}
