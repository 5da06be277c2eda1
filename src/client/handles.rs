//! The handles `CsiProxy` gives out: a group's [`Lookout`] with the
//! options of the calls made through it.
//!
//! Each group trait is implemented on its handle in `handle_traits.rs`, generated
//! from the RPC catalogue (`catalogue/`): every method runs its call on
//! the lookout ([`Lookout::run`]) as the operation the catalogue gives it,
//! whose deadline, retry rule, metrics label and span apply. A method with
//! argument checks runs them first; a refused argument is answered by
//! [`Lookout::refused`], recorded like any outcome, and nothing is sent.

use std::sync::Arc;

use super::lookout::Lookout;
use super::options::CallOptions;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}
