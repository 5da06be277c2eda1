//! Path normalization and validation, and the other parsers of user input:
//! never a panic, and whatever is accepted keeps the promised shape.

#![no_main]

use csi_proxy_client::{
    api::{SmbRemotePath, VolumeId, WindowsPath},
    transport::Transport,
    ApiGroup, ApiVersion,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = WindowsPath::new(text) {
        let p = path.as_str();
        let bytes = p.as_bytes();
        assert!(p.len() <= 260, "{p:?} is too long");
        assert!(
            bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\',
            "{p:?}"
        );
        assert!(!p.contains(".."), "{p:?}");
        assert!(
            !p[3..].contains(['"', '/', ':', '?', '*', '|', '\0']),
            "{p:?}"
        );
        // Normalizing a normalized path changes nothing.
        assert_eq!(WindowsPath::new(p).unwrap().as_str(), p);
    }
    if let Ok(share) = SmbRemotePath::new(text) {
        assert!(share.as_str().starts_with(r"\\") && !share.as_str().contains('/'));
    }
    if let Ok(version) = text.parse::<ApiVersion>() {
        assert_eq!(version.to_string(), text, "versions print as parsed");
    }
    if let Ok(group) = text.parse::<ApiGroup>() {
        assert_eq!(group.as_str(), text);
    }
    let _ = VolumeId::new(text);
    if let Ok(transport) = Transport::named_pipes_with_prefix(text) {
        let pipe = transport.address(ApiGroup::Disk, ApiVersion::V1);
        assert!(
            pipe.starts_with(r"\\.\pipe\"),
            "{pipe:?} is not a local pipe"
        );
    }
});
