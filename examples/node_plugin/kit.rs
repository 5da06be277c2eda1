//! The example's deployment kit: `manifests` writes it (the library's
//! `csi::render_manifests`, with this driver's name, image and flags;
//! `deploy/*.yaml` are its output with no options), and `check-manifests`
//! holds manifests an operator edited to what a schema cannot see: the
//! socket's folder is made, the registration path names this driver, every
//! pipe the plugin's kinds need is mounted (and no other), and every
//! container has resource requests.

use std::collections::{BTreeSet, HashMap};

use csi_proxy_client::csi::{
    proxy_pipes, render_manifests, ManifestOptions, Manifests, NodeDriver, Toleration,
};
use yaml_rust2::{Yaml, YamlLoader};

use super::driver::{ExampleDriver, DRIVER_NAME};

/// The image the kit names, without its tag.
pub const IMAGE: &str = "registry.example.com/csi-node-plugin-example";

/// `manifests`' options.
pub const MANIFESTS_USAGE: &str = "\
node_plugin manifests [options]: the kit's YAML (CSIDriver, ServiceAccount,
DaemonSet) on stdout, for `kubectl apply -f -`. With no options, deploy/'s.
  --host-process            the HostProcess variant (no CSI Proxy, no pipes)
  --image REPOSITORY        the plugin's image (default: registry.example.com/csi-node-plugin-example)
  --tag TAG                 its tag (default: 0.1.0, or 0.1.0-hostprocess)
  --kind KINDS              the volumes served: disk, smb or disk,smb (default: disk,smb)
  --oldest-csi-proxy vX.Y.Z the oldest CSI Proxy on the fleet: the pipes follow (default: v1.0.0)
  --health-port PORT        livenessprobe's port (default: 29661)
  --namespace NAMESPACE     (default: kube-system)
  --node-selector KEY=VALUE the pods' node selector, repeatable (default: kubernetes.io/os=windows)
  --toleration KEY=VALUE:EFFECT or KEY, repeatable (default: node.kubernetes.io/os=windows:NoSchedule)";

/// The kit's options for this driver: what `deploy/` holds.
pub fn example_options(host_process: bool) -> ManifestOptions {
    options_with(host_process, IMAGE, example_tag(host_process))
}

/// `manifests [options]`: the YAML, or what is wrong with the options.
pub fn manifests_command(args: &[String]) -> Result<String, String> {
    let mut words = args.iter();
    let mut host_process = false;
    let mut values: HashMap<&str, String> = HashMap::new();
    let mut selector: Vec<(String, String)> = Vec::new();
    let mut tolerations: Vec<Toleration> = Vec::new();
    while let Some(word) = words.next() {
        let flag = word.as_str();
        if flag == "--host-process" {
            host_process = true;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Ok(format!("{MANIFESTS_USAGE}\n"));
        }
        let known = [
            "--image",
            "--tag",
            "--kind",
            "--oldest-csi-proxy",
            "--health-port",
            "--namespace",
            "--node-selector",
            "--toleration",
        ];
        if !known.contains(&flag) {
            return Err(format!("unknown option {flag}\n{MANIFESTS_USAGE}"));
        }
        let value = words
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        match flag {
            "--node-selector" => {
                let (key, label) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--node-selector {value}: KEY=VALUE"))?;
                selector.push((key.to_owned(), label.to_owned()));
            }
            "--toleration" => tolerations.push(toleration(&value)),
            _ => {
                values.insert(flag, value);
            }
        }
    }
    let mut options = example_options(host_process);
    if let Some(image) = values.get("--image") {
        let tag = values
            .get("--tag")
            .cloned()
            .unwrap_or_else(|| example_tag(host_process).to_owned());
        options = options_with(host_process, image, &tag);
    } else if let Some(tag) = values.get("--tag") {
        options = options_with(host_process, IMAGE, tag);
    }
    if let Some(kinds) = values.get("--kind") {
        let driver = ExampleDriver::of_kind(kinds)?;
        options = options
            .kinds(driver.kinds())
            .driver_args(["--kind", kinds.as_str()]);
    }
    if let Some(release) = values.get("--oldest-csi-proxy") {
        options = options.oldest_proxy(parse_release(release)?);
    }
    if let Some(port) = values.get("--health-port") {
        let port = port
            .parse()
            .map_err(|_| format!("--health-port {port}: a port number"))?;
        options = options.health_port(port);
    }
    if let Some(namespace) = values.get("--namespace") {
        options = options.namespace(namespace.as_str());
    }
    if !selector.is_empty() {
        let pairs: Vec<(&str, &str)> = selector
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        options = options.node_selector(&pairs);
    }
    if !tolerations.is_empty() {
        options = options.tolerations(tolerations);
    }
    let manifests: Manifests = render_manifests(&options).map_err(|error| error.to_string())?;
    Ok(manifests.to_string())
}

fn example_tag(host_process: bool) -> &'static str {
    if host_process {
        "0.1.0-hostprocess"
    } else {
        "0.1.0"
    }
}

/// The example's options with the image `image:tag`.
fn options_with(host_process: bool, image: &str, tag: &str) -> ManifestOptions {
    let options = ManifestOptions::new(DRIVER_NAME, image, tag)
        .kinds(ExampleDriver::of_kind("disk,smb").unwrap().kinds())
        .driver_args(["--kind", "disk,smb"])
        .app_name("csi-node-plugin-example");
    if host_process {
        options.host_process(["node_plugin.exe", "serve"])
    } else {
        options
    }
}

/// `KEY=VALUE:EFFECT`, or `KEY` alone (every value and effect).
fn toleration(text: &str) -> Toleration {
    match text.split_once('=') {
        Some((key, rest)) => match rest.split_once(':') {
            Some((value, effect)) => Toleration::equal(key, value, effect),
            None => Toleration::equal(key, rest, "NoSchedule"),
        },
        None => Toleration::exists(text),
    }
}

/// `v1.2.3` (or `1.2.3`) as (1, 2, 3).
pub fn parse_release(text: &str) -> Result<(u32, u32, u32), String> {
    let bad = || format!("{text}: a CSI Proxy release, as v1.2.3");
    let parts: Vec<u32> = text
        .strip_prefix('v')
        .unwrap_or(text)
        .split('.')
        .map(|part| part.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    match parts[..] {
        [major, minor, patch] => Ok((major, minor, patch)),
        _ => Err(bad()),
    }
}

/// `check-manifests FILE...`: each problem on a line, or what was checked.
pub fn check_manifests_command(files: &[String]) -> Result<String, String> {
    if files.is_empty() {
        return Err("check-manifests FILE...: the manifests to check".into());
    }
    let mut text = String::new();
    for file in files {
        let content = std::fs::read_to_string(file).map_err(|error| format!("{file}: {error}"))?;
        text.push_str(&content);
        text.push_str("\n---\n");
    }
    let (daemon_sets, problems) = check(&text)?;
    if problems.is_empty() {
        Ok(format!(
            "{daemon_sets} DaemonSet(s) checked: socket folder, registration, pipes, resources"
        ))
    } else {
        Err(problems.join("\n"))
    }
}

/// The problems of the manifests in `text` (YAML documents), and how many
/// DaemonSets it holds; an error when it is not YAML or holds none.
pub fn check(text: &str) -> Result<(usize, Vec<String>), String> {
    let documents = YamlLoader::load_from_str(text).map_err(|error| error.to_string())?;
    let mut problems = Vec::new();
    let drivers: Vec<&str> = documents
        .iter()
        .filter(|document| str_of(&document["kind"]) == "CSIDriver")
        .map(|document| str_of(&document["metadata"]["name"]))
        .collect();
    for name in &drivers {
        if *name != DRIVER_NAME {
            problems.push(format!(
                "CSIDriver {name}: the plugin registers as {DRIVER_NAME}"
            ));
        }
    }
    let daemon_sets: Vec<&Yaml> = documents
        .iter()
        .filter(|document| str_of(&document["kind"]) == "DaemonSet")
        .collect();
    if daemon_sets.is_empty() {
        return Err("no DaemonSet among the manifests".into());
    }
    for daemon_set in &daemon_sets {
        let name = str_of(&daemon_set["metadata"]["name"]);
        for problem in check_daemon_set(daemon_set) {
            problems.push(format!("DaemonSet {name}: {problem}"));
        }
    }
    Ok((daemon_sets.len(), problems))
}

fn str_of(node: &Yaml) -> &str {
    node.as_str().unwrap_or_default()
}

fn list(node: &Yaml) -> &[Yaml] {
    node.as_vec().map(Vec::as_slice).unwrap_or_default()
}

fn strings(node: &Yaml) -> Vec<String> {
    list(node)
        .iter()
        .map(|item| str_of(item).to_owned())
        .collect()
}

/// The value of `--flag=value`, or of `--flag value`, among `args`.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let prefix = format!("{flag}=");
    for (at, arg) in args.iter().enumerate() {
        if let Some(value) = arg.strip_prefix(&prefix) {
            return Some(value.to_owned());
        }
        if arg == flag {
            return args.get(at + 1).cloned();
        }
    }
    None
}

/// A container's args, `$(VAR)` replaced from its `env` values.
fn resolved_args(container: &Yaml) -> Vec<String> {
    let env: HashMap<String, String> = list(&container["env"])
        .iter()
        .filter_map(|variable| {
            let value = variable["value"].as_str()?;
            Some((
                format!("$({})", str_of(&variable["name"])),
                value.to_owned(),
            ))
        })
        .collect();
    strings(&container["args"])
        .into_iter()
        .map(|arg| env.get(&arg).cloned().unwrap_or(arg))
        .collect()
}

/// `unix://C:\csi\csi.sock` as `C:\csi`.
fn socket_folder(endpoint: &str) -> Option<&str> {
    let path = endpoint.strip_prefix("unix://")?;
    path.rsplit_once('\\').map(|(folder, _)| folder)
}

fn check_daemon_set(daemon_set: &Yaml) -> Vec<String> {
    let mut problems = Vec::new();
    let spec = &daemon_set["spec"]["template"]["spec"];
    let containers = list(&spec["containers"]);
    let all = containers.iter().chain(list(&spec["initContainers"]));
    for container in all {
        let requests = &container["resources"]["requests"];
        if requests["cpu"].is_badvalue() || requests["memory"].is_badvalue() {
            problems.push(format!(
                "container {} has no CPU and memory requests",
                str_of(&container["name"])
            ));
        }
    }
    let with_arg = |flag: &str| {
        containers.iter().find(|container| {
            resolved_args(container)
                .iter()
                .any(|arg| arg == flag || arg.starts_with(&format!("{flag}=")))
        })
    };
    let Some(plugin) = with_arg("--endpoint") else {
        problems.push("no container runs the plugin (--endpoint)".into());
        return problems;
    };
    let plugin_args = resolved_args(plugin);
    let endpoint = flag_value(&plugin_args, "--endpoint").unwrap_or_default();
    let Some(registrar) = with_arg("--kubelet-registration-path") else {
        problems.push("no node-driver-registrar (--kubelet-registration-path)".into());
        return problems;
    };
    let registrar_args = resolved_args(registrar);
    let registration =
        flag_value(&registrar_args, "--kubelet-registration-path").unwrap_or_default();
    let expected = format!(r"C:\var\lib\kubelet\plugins\{DRIVER_NAME}\csi.sock");
    if !registration.eq_ignore_ascii_case(&expected) {
        problems.push(format!(
            "the registration path {registration} is not {expected}, the socket of the driver the plugin names"
        ));
    }
    for sidecar in [Some(registrar), with_arg("--health-port")]
        .into_iter()
        .flatten()
    {
        let address = flag_value(&resolved_args(sidecar), "--csi-address").unwrap_or_default();
        if address != endpoint {
            problems.push(format!(
                "container {} dials {address}, the plugin serves {endpoint}",
                str_of(&sidecar["name"])
            ));
        }
    }
    let host_process =
        spec["securityContext"]["windowsOptions"]["hostProcess"].as_bool() == Some(true);
    let Some(folder) = socket_folder(&endpoint) else {
        problems.push(format!(
            "the endpoint {endpoint} is not unix://<folder>\\<socket>"
        ));
        return problems;
    };
    let volumes = list(&spec["volumes"]);
    if host_process {
        // The plugin makes its endpoint's folder on the host itself, so the
        // endpoint must be the socket kubelet is told of.
        let served = endpoint.trim_start_matches("unix://");
        if !served.eq_ignore_ascii_case(&registration) {
            problems.push(format!(
                "the plugin serves {served} on the host, the registrar registers {registration}"
            ));
        }
    } else {
        // The socket's folder is a hostPath kubelet makes (DirectoryOrCreate),
        // mounted where the plugin serves, whose host side is registered.
        let mount = list(&plugin["volumeMounts"])
            .iter()
            .find(|mount| str_of(&mount["mountPath"]).eq_ignore_ascii_case(folder));
        let volume = mount.and_then(|mount| {
            volumes
                .iter()
                .find(|volume| str_of(&volume["name"]) == str_of(&mount["name"]))
        });
        match volume {
            None => problems.push(format!(
                "the socket's folder {folder} is not a volume mounted in the plugin's container"
            )),
            Some(volume) => {
                let host = &volume["hostPath"];
                if str_of(&host["type"]) != "DirectoryOrCreate" {
                    problems.push(format!(
                        "the socket's folder's hostPath is of type {:?}: DirectoryOrCreate makes it",
                        str_of(&host["type"])
                    ));
                }
                let socket = endpoint.rsplit('\\').next().unwrap_or_default();
                let on_host = format!(r"{}\{socket}", str_of(&host["path"]));
                if !on_host.eq_ignore_ascii_case(&registration) {
                    problems.push(format!(
                        "the plugin's socket is {on_host} on the host, the registrar registers {registration}"
                    ));
                }
            }
        }
        problems.extend(check_pipes(daemon_set, plugin, &plugin_args, volumes));
    }
    problems
}

/// The pipes: exactly what `proxy_pipes` gives for the plugin's `--kind`
/// and the annotated oldest CSI Proxy, each mounted at its own path.
fn check_pipes(
    daemon_set: &Yaml,
    plugin: &Yaml,
    plugin_args: &[String],
    volumes: &[Yaml],
) -> Vec<String> {
    let mut problems = Vec::new();
    let annotation = &daemon_set["metadata"]["annotations"]["csi-proxy-client.rs/oldest-csi-proxy"];
    let release = match parse_release(str_of(annotation)) {
        Ok(release) => release,
        Err(_) => {
            return vec![
                "no csi-proxy-client.rs/oldest-csi-proxy annotation (as v1.0.0): the pipes cannot be checked"
                    .into(),
            ]
        }
    };
    let mut args = plugin_args.to_vec();
    let kinds = match ExampleDriver::from_args(&mut args) {
        Ok(driver) => driver.kinds().to_vec(),
        Err(error) => return vec![error],
    };
    let needed: BTreeSet<String> = match proxy_pipes(&kinds, release) {
        Ok(pipes) => pipes.into_iter().collect(),
        Err(error) => return vec![error.to_string()],
    };
    let pipe_volumes: HashMap<&str, &str> = volumes
        .iter()
        .filter_map(|volume| {
            let path = str_of(&volume["hostPath"]["path"]);
            path.starts_with(r"\\.\pipe\")
                .then(|| (str_of(&volume["name"]), path))
        })
        .collect();
    let mut mounted = BTreeSet::new();
    for mount in list(&plugin["volumeMounts"]) {
        if let Some(pipe) = pipe_volumes.get(str_of(&mount["name"])) {
            if str_of(&mount["mountPath"]) != *pipe {
                problems.push(format!("the pipe {pipe} is mounted at another path"));
            }
            mounted.insert((*pipe).to_owned());
        }
    }
    for pipe in needed.difference(&mounted) {
        problems.push(format!(
            "the pipe {pipe} is not mounted in the plugin's container"
        ));
    }
    for pipe in pipe_volumes.values() {
        if !needed.contains(*pipe) {
            problems.push(format!(
                "the pipe {pipe} is not one the plugin's kinds need from that release: a node whose proxy lacks it cannot start the pod"
            ));
        }
    }
    problems
}
