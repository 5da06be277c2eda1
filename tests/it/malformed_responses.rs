//! Every operation at every wire version, answered with random bytes and
//! with valid messages of the wrong shape: the adapters return a value or a
//! typed error, and never panic. (The `fuzz/` targets do the same without a
//! bound; this is the part every test run does.)

use crate::common::{every_version, TestNode};
use csi_proxy_client::testing::sample;
use csi_proxy_client::{Error, Operation};

/// A small deterministic generator, so a failure can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self) -> Vec<u8> {
        let len = (self.next() % 48) as usize;
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Protobuf fragments that decode but carry surprising values: numbers in
/// string fields, negative and huge varints, empty and odd map entries.
fn tricky_replies() -> Vec<Vec<u8>> {
    vec![
        vec![],
        vec![
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ], // field 1 = -1
        vec![0x08, 0x80, 0x80, 0x80, 0x80, 0x10], // field 1 = 2^32
        vec![0x0a, 0x03, b'a', b'b', b'c'],       // field 1 = "abc"
        vec![0x0a, 0x00],                         // field 1 = ""
        vec![0x0a, 0x02, 0x0a, 0x00],             // entry with empty key
        vec![0x0a, 0x04, 0x0a, 0x02, b'-', b'1'], // key "-1"
        vec![0x0a, 0x05, 0x08, 0x01, 0x12, 0x01, 0x00], // entry, value garbage
        vec![0x10, 0x2a, 0x18, 0x2a],             // fields 2 and 3 = 42
        vec![0x12, 0x01, b'x', 0x0a, 0x01, b'9'], // fields out of order
        vec![
            0x0a, 0x0c, 0x0a, 0x08, b'1', b'0', b'.', b'0', b'.', b'0', b'.', b'1', 0x10, 0x80,
            0x80, 0x04,
        ],
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_answer_gives_a_value_or_a_typed_error() {
    let mut rng = XorShift(0x5eed_cafe_f00d_0001);
    let mut tried = 0;
    let mut rejected = 0;
    for (group, version) in every_version() {
        let node = TestNode::new();
        let raw = node.raw(group, version).await;
        let proxy = node.connect(group, version).await;
        for op in Operation::of_group(group) {
            let mut replies = tricky_replies();
            replies.extend((0..12).map(|_| rng.bytes()));
            for reply in replies {
                raw.reply_bytes(&reply);
                tried += 1;
                match sample::call(&proxy, op).await {
                    Ok(()) => {}
                    Err(Error::InvalidResponse { operation, .. }) => {
                        assert_eq!(operation.group(), group);
                        rejected += 1;
                    }
                    // The legacy `error` field of old versions is a failure.
                    Err(
                        Error::Host { .. } | Error::Unsupported { .. } | Error::NotFound { .. },
                    ) => {}
                    Err(other) => panic!("{group} {version} {op} with {reply:02x?}: {other:?}"),
                }
            }
        }
    }
    assert!(tried > 3000, "{tried}");
    assert!(
        rejected > 100,
        "malformed answers must be noticed: {rejected} of {tried}"
    );
    eprintln!(
        "malformed responses: {tried} tried, {rejected} rejected as InvalidResponse, 0 panics"
    );
}
