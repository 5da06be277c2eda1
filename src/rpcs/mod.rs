//! Every RPC, defined once: one list per group.
//!
//! A list is the group trait's header, then one entry per method, each
//! everything the crate knows of that method:
//!
//! ```text
//! /// The trait's docs.
//! trait VolumeApi: Volume => VolumeOperation;
//!
//! /// The method's docs.
//! fn method(&self, arg: Type, ...) -> Answer = {
//!     /// The operation's one-line docs.
//!     Operation = "NewestRpcName", Reads | Mutates | SlowlyMutates,
//!         [V1ALPHA1 => Native("RpcName"), V1BETA3 => No, ...]
//! }
//! check { <an expression over the arguments, a `Result<()>`> }
//! default { <the trait's default body, when it is not `NotImplemented`> };
//! ```
//!
//! The operation row says what the method is on the wire, version by
//! version (from each listed version on, until the next), and whether it
//! changes the host (which picks its retry rule and, for
//! `SlowlyMutates`, its long default deadline). A method that is more
//! than one operation picks its operation from its arguments:
//! `= by <expression> => { row; row }`. `check` and `default` are
//! optional.
//!
//! A list is a macro that hands itself to another: `disk_rpcs!(m)`
//! expands to `m! { { <the list> } }` (and `disk_rpcs!(m a b)` to
//! `m! { a b { <the list> } }`, which is how `capability` collects all
//! six). From the same lists:
//!
//! - `capability` makes [`Operation`](crate::Operation), its group
//!   enums and its table (`operations!`);
//! - `api` makes the public group traits (`group_trait!`);
//! - the client makes the handle of each group (`relay!`);
//! - `testing::sample` makes a call of every operation with sample
//!   arguments, each argument's sample chosen by its name.
//!
//! So a method's operation, and with it its label, deadline, retry rule
//! and span, cannot differ between those layers. Names in a list (the
//! argument and answer types, `check_name`, ...) are resolved where a
//! list is expanded, not here: this module imports nothing, which keeps
//! it below the vocabulary that `capability` is part of.

mod disk;
mod filesystem;
mod iscsi;
mod smb;
mod system;
mod volume;

pub(crate) use disk::disk_rpcs;
pub(crate) use filesystem::filesystem_rpcs;
pub(crate) use iscsi::iscsi_rpcs;
pub(crate) use smb::smb_rpcs;
pub(crate) use system::system_rpcs;
pub(crate) use volume::volume_rpcs;
