//! How a fake proxy creates its endpoints when it starts: all at once, or
//! one after the other in a chosen order, as a real proxy does.

use std::time::Duration;

use crate::group::ApiGroup;
use crate::version::ApiVersion;

/// The order in which a fake proxy creates its endpoints when it starts
/// (see [`Startup`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartOrder {
    /// In the order the versions were given.
    #[default]
    AsGiven,
    /// Oldest versions first (`v1alpha1` of every group before any
    /// `v1beta1`, and so on): the newest version appears last, the window
    /// in which a client can find only older ones.
    OldestFirst,
    /// Newest versions first.
    NewestFirst,
    /// A shuffle drawn from `seed`: the same seed gives the same order.
    Shuffled {
        /// The seed of the shuffle; print it to replay a failure.
        seed: u64,
    },
}

impl StartOrder {
    /// Puts `versions` in this order.
    pub fn arrange(self, versions: &mut [(ApiGroup, ApiVersion)]) {
        match self {
            Self::AsGiven => {}
            Self::OldestFirst => versions.sort_by_key(|&(g, v)| (v, g)),
            Self::NewestFirst => versions.sort_by_key(|&(g, v)| std::cmp::Reverse((v, g))),
            Self::Shuffled { seed } => shuffle(versions, seed),
        }
    }
}

/// A Fisher-Yates shuffle driven by splitmix64: no dependency, and the
/// same order for the same seed on every platform.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// How a fake proxy starts: in which order it creates its endpoints, and
/// how long it waits between two of them. The default creates them all at
/// once, in the order given.
///
/// A real proxy creates its pipes one after the other: a client that looks
/// in between finds only some of them. A staged start reproduces that
/// window, so that tests can check that a client still ends on the newest
/// version.
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::testing::{StartOrder, Startup};
/// use csi_proxy_client::{ApiGroup, ApiVersion};
///
/// let startup = Startup::staged(StartOrder::OldestFirst, Duration::from_millis(20));
/// let mut versions = vec![(ApiGroup::Disk, ApiVersion::V1), (ApiGroup::Disk, ApiVersion::V1BETA2)];
/// startup.order.arrange(&mut versions);
/// assert_eq!(versions[0].1, ApiVersion::V1BETA2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Startup {
    /// The order of the endpoints.
    pub order: StartOrder,
    /// The wait between creating one endpoint and the next.
    pub gap: Duration,
}

impl Startup {
    /// The endpoints in `order`, `gap` apart.
    pub fn staged(order: StartOrder, gap: Duration) -> Self {
        Self { order, gap }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApiGroup as G;
    use ApiVersion as V;

    fn versions() -> Vec<(ApiGroup, ApiVersion)> {
        vec![
            (G::Disk, V::V1BETA2),
            (G::Disk, V::V1),
            (G::Volume, V::V1ALPHA1),
            (G::Disk, V::V1ALPHA1),
        ]
    }

    #[test]
    fn oldest_and_newest_first_sort_by_version_then_group() {
        let mut oldest = versions();
        StartOrder::OldestFirst.arrange(&mut oldest);
        assert_eq!(
            oldest,
            [
                (G::Disk, V::V1ALPHA1),
                (G::Volume, V::V1ALPHA1),
                (G::Disk, V::V1BETA2),
                (G::Disk, V::V1)
            ]
        );
        let mut newest = versions();
        StartOrder::NewestFirst.arrange(&mut newest);
        oldest.reverse();
        assert_eq!(newest, oldest);
    }

    #[test]
    fn a_shuffle_is_a_permutation_that_its_seed_repeats() {
        let (mut a, mut b) = (versions(), versions());
        StartOrder::Shuffled { seed: 7 }.arrange(&mut a);
        StartOrder::Shuffled { seed: 7 }.arrange(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        let mut expected = versions();
        expected.sort();
        assert_eq!(sorted, expected);
        let orders: std::collections::HashSet<_> = (0..20)
            .map(|seed| {
                let mut v = versions();
                StartOrder::Shuffled { seed }.arrange(&mut v);
                v
            })
            .collect();
        assert!(orders.len() > 1, "seeds give different orders");
    }

    #[test]
    fn as_given_keeps_the_order() {
        let mut v = versions();
        StartOrder::AsGiven.arrange(&mut v);
        assert_eq!(v, versions());
    }
}
