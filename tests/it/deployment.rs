//! The deployment kit (`deploy/`) held to the plugin it deploys and to its
//! generator: `deploy/*.yaml` are what `csi::render_manifests` writes for
//! the example (`node_plugin manifests`, both modes; a stale file fails,
//! and `CSI_PROXY_REGENERATE=1 cargo test --test it deployment` rewrites
//! them); the example's `check-manifests` finds what a schema cannot see,
//! on both modes' output and on each mistake it names. Each
//! DaemonSet's arguments, after the image's entrypoint (`deploy/Dockerfile`),
//! are flags the example plugin's parser takes; the sidecars talk to the
//! socket the plugin serves; the pipes mounted are the ones
//! `csi::proxy_pipes` gives for the plugin's kinds and the oldest CSI Proxy
//! the manifest names, and nothing else; the CSIDriver names the driver.
//! CI validates the same files against Kubernetes' schemas
//! (`kubernetes-validate`, in `.ci/run`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use csi_proxy_client::csi::{
    proxy_pipes, render_manifests, NodeDriver, NodePlugin, ServeError, VolumeKind,
    DEFAULT_HEALTH_PORT, LIVENESSPROBE_IMAGE, NODE_DRIVER_REGISTRAR_IMAGE,
};
use yaml_rust2::{Yaml, YamlLoader};

use crate::node_plugin::driver;
use crate::node_plugin::driver::{ExampleDriver, DRIVER_NAME};

#[path = "../../examples/node_plugin/kit.rs"]
mod kit;

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

/// Every file of `deploy/` the kit's two modes write, by name.
fn kit_files() -> Vec<(&'static str, String)> {
    let mut files: Vec<(&'static str, String)> = Vec::new();
    for host_process in [false, true] {
        let manifests = render_manifests(&kit::example_options(host_process)).unwrap();
        for (name, text) in manifests.files() {
            match files.iter().find(|(have, _)| *have == name) {
                // The CSIDriver and the ServiceAccount: one for both modes.
                Some((_, same)) => assert_eq!(same, text, "{name}: the same in both modes"),
                None => files.push((name, text.to_owned())),
            }
        }
    }
    files
}

#[test]
fn the_kit_is_the_generators_output_with_no_options() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let regenerate = std::env::var_os("CSI_PROXY_REGENERATE").is_some();
    let files = kit_files();
    let mut stale = Vec::new();
    for (name, text) in &files {
        let path = deploy.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if regenerate {
            std::fs::write(&path, text).unwrap();
        } else {
            stale.push(*name);
        }
    }
    assert!(
        stale.is_empty(),
        "deploy/{stale:?} differ from what csi::render_manifests writes for the example; \
         run `CSI_PROXY_REGENERATE=1 cargo test --test it deployment`"
    );
    // No hand-written manifest beside them.
    for entry in std::fs::read_dir(&deploy).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".yaml") {
            assert!(
                files.iter().any(|(file, _)| *file == name),
                "deploy/{name}: not the generator's"
            );
        }
    }
}

/// What the example's `check-manifests` says of `text`.
fn problems(text: &str) -> Vec<String> {
    let (daemon_sets, problems) = kit::check(text).unwrap();
    assert_eq!(daemon_sets, 1, "{text}");
    problems
}

#[test]
fn both_modes_pass_the_checks_a_schema_cannot_make() {
    for host_process in [false, true] {
        let text = render_manifests(&kit::example_options(host_process))
            .unwrap()
            .to_string();
        assert_eq!(problems(&text), Vec::<String>::new(), "{text}");
    }
    // And the files as checked in, all at once, as an operator runs it.
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let files: Vec<String> = ["csidriver.yaml", "serviceaccount.yaml", "node-windows.yaml"]
        .into_iter()
        .chain(["node-windows-hostprocess.yaml"])
        .map(|name| deploy.join(name).to_string_lossy().into_owned())
        .collect();
    let checked = kit::check_manifests_command(&files).unwrap();
    assert!(checked.starts_with("2 DaemonSet(s) checked"), "{checked}");
}

/// `text` with `from` replaced (once, and it must be there).
fn edited(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in\n{text}");
    text.replacen(from, to, 1)
}

/// The one problem found in `text`, which must contain `words`.
fn assert_found(text: &str, words: &str) {
    let found = problems(text);
    assert!(
        found.iter().any(|problem| problem.contains(words)),
        "{words:?} not in {found:?}"
    );
}

#[test]
fn the_checks_find_each_mistake_a_schema_lets_through() {
    let normal = render_manifests(&kit::example_options(false))
        .unwrap()
        .to_string();
    // A pipe the plugin needs, not mounted.
    let unmounted = edited(
        &normal,
        "            - name: csi-proxy-smb-v1\n              mountPath: \\\\.\\pipe\\csi-proxy-smb-v1\n",
        "",
    );
    assert_found(&unmounted, r"\\.\pipe\csi-proxy-smb-v1 is not mounted");
    // A pipe newer than the fleet's oldest proxy serves.
    let newer = normal.replace("csi-proxy-disk-v1", "csi-proxy-disk-v2");
    assert_found(&newer, "not one the plugin's kinds need");
    // The fleet's release left unsaid.
    let unsaid = edited(&normal, "csi-proxy-client.rs/oldest-csi-proxy", "x/y");
    assert_found(&unsaid, "oldest-csi-proxy annotation");
    // The registration names another driver.
    let other = edited(
        &normal,
        r"--kubelet-registration-path=C:\var\lib\kubelet\plugins\node-plugin",
        r"--kubelet-registration-path=C:\var\lib\kubelet\plugins\other-plugin",
    );
    assert_found(&other, "the socket of the driver the plugin names");
    let renamed = edited(
        &normal,
        "  name: node-plugin.example.csi-proxy-client.rs\n",
        "  name: other.example.com\n",
    );
    assert_found(&renamed, "CSIDriver other.example.com");
    // A socket folder nothing makes.
    let unmade = edited(&normal, "type: DirectoryOrCreate", "type: Directory");
    assert_found(&unmade, "DirectoryOrCreate makes it");
    // A sidecar dialling another socket.
    let elsewhere = edited(
        &normal,
        r"--csi-address=unix://C:\csi\csi.sock",
        r"--csi-address=unix://C:\csi\other.sock",
    );
    assert_found(&elsewhere, "dials");
    // A container with no requests.
    let at = normal.find("name: liveness-probe").unwrap();
    let (head, tail) = normal.split_at(at);
    let greedy = format!("{head}{}", edited(tail, "requests:", "requested:"));
    assert_found(
        &greedy,
        "container liveness-probe has no CPU and memory requests",
    );

    let host = render_manifests(&kit::example_options(true))
        .unwrap()
        .to_string();
    let moved = edited(
        &host,
        r"value: unix://C:\var\lib\kubelet\plugins\node-plugin.example.csi-proxy-client.rs\csi.sock",
        r"value: unix://C:\elsewhere\csi.sock",
    );
    assert_found(&moved, "the registrar registers");
    assert!(kit::check("kind: Service\n").is_err(), "no DaemonSet");
}

#[test]
fn the_node_has_its_own_service_account_with_no_token() {
    let account = manifest("serviceaccount.yaml");
    assert_eq!(text(&account["kind"]), "ServiceAccount");
    assert_eq!(
        account["automountServiceAccountToken"].as_bool(),
        Some(false)
    );
    for file in ["node-windows.yaml", "node-windows-hostprocess.yaml"] {
        let spec = &manifest(file)["spec"]["template"]["spec"];
        assert_eq!(
            text(&spec["serviceAccountName"]),
            text(&account["metadata"]["name"])
        );
        assert_eq!(spec["automountServiceAccountToken"].as_bool(), Some(false));
    }
}

#[test]
fn liveness_outlasts_a_proxy_upgrade_on_a_port_of_its_own() {
    for file in ["node-windows.yaml", "node-windows-hostprocess.yaml"] {
        let daemon_set = manifest(file);
        let plugin = container(&daemon_set, "node-plugin");
        let liveness = &plugin["livenessProbe"];
        let seconds = |key: &str| liveness[key].as_i64().unwrap();
        // Five minutes of not-ready before a restart, as csi-driver-smb.
        assert!(seconds("initialDelaySeconds") >= 60, "{file}");
        assert!(seconds("failureThreshold") * seconds("periodSeconds") >= 300);
        let probe = strings(&container(&daemon_set, "liveness-probe")["args"]);
        let csi_timeout: i64 = flag(&probe, "--probe-timeout")
            .trim_end_matches('s')
            .parse()
            .unwrap();
        assert!(csi_timeout >= 30 && seconds("timeoutSeconds") > csi_timeout);
        // Not csi-driver-smb's port: a HostProcess pod shares the node's.
        let port = flag(&probe, "--health-port");
        assert_ne!(port, "29643");
        assert_eq!(port, DEFAULT_HEALTH_PORT.to_string());
        // The sidecars, on the releases the library names.
        for (name, image) in [
            ("node-driver-registrar", NODE_DRIVER_REGISTRAR_IMAGE),
            ("liveness-probe", LIVENESSPROBE_IMAGE),
        ] {
            assert_eq!(text(&container(&daemon_set, name)["image"]), image);
        }
    }
}

#[test]
fn the_manifests_subcommand_writes_the_kit_and_takes_options() {
    let none: [String; 0] = [];
    let default = kit::manifests_command(&none).unwrap();
    let expected = render_manifests(&kit::example_options(false)).unwrap();
    assert_eq!(default, expected.to_string());
    let args = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let host = kit::manifests_command(&args(&["--host-process"])).unwrap();
    assert!(host.contains("hostProcess: true"));
    assert!(host.contains("csi-node-plugin-example:0.1.0-hostprocess"));

    let custom = kit::manifests_command(&args(&[
        "--kind",
        "smb",
        "--oldest-csi-proxy",
        "v1.1.0",
        "--image",
        "mirror.example.org/plugin",
        "--tag",
        "2.0",
        "--health-port",
        "29999",
        "--node-selector",
        "pool=storage",
        "--toleration",
        "dedicated=storage:NoExecute",
    ]))
    .unwrap();
    assert_eq!(problems(&custom), Vec::<String>::new());
    for words in [
        r"\\.\pipe\csi-proxy-smb-v1",
        "image: mirror.example.org/plugin:2.0\n",
        "--health-port=29999",
        "pool: storage",
        "effect: NoExecute",
        "attachRequired: false",
    ] {
        assert!(custom.contains(words), "{words:?} in\n{custom}");
    }
    assert!(
        !custom.contains("csi-proxy-disk"),
        "shares need no disk pipe"
    );
    for bad in [
        &["--nope"][..],
        &["--kind", "tape"],
        &["--oldest-csi-proxy", "one"],
        &["--health-port", "0"],
        &["--image"],
    ] {
        assert!(kit::manifests_command(&args(bad)).is_err(), "{bad:?}");
    }
}

/// Strings a YAML reader could take for something else read back as
/// written: the generator quotes what needs it.
#[test]
fn every_string_reads_back_as_written() {
    let tricky = [
        "yes",
        "a: b",
        "#x",
        "1.0",
        "0x1F",
        "~",
        "",
        "-",
        "q\"\\",
        "tab\there",
        "[x]",
        "{x}",
        "& *",
        "!x",
        "%x",
        "@x",
        "`x`",
        "x #y",
        "é ü",
    ];
    let options = csi_proxy_client::csi::ManifestOptions::new(DRIVER_NAME, "r.example/i", "1.0")
        .driver_args(tricky)
        .namespace("no");
    let rendered = render_manifests(&options).unwrap().daemon_set;
    let daemon_set = YamlLoader::load_from_str(&rendered).unwrap().remove(0);
    let args = strings(&container(&daemon_set, "node-plugin")["args"]);
    assert_eq!(
        args[..tricky.len()],
        tricky.map(str::to_owned),
        "{rendered}"
    );
    assert_eq!(text(&daemon_set["metadata"]["namespace"]), "no");
    assert_eq!(
        text(&container(&daemon_set, "node-plugin")["image"]),
        "r.example/i:1.0"
    );
}
