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
