//! A message layout, written once as a table that both sides of the wire
//! read: [`wire_adapter!`] makes the client's adapter of it, and the fake
//! proxy's `wire_server!` (`src/testing/fake_proxy/layout.rs`) the server
//! that reads the same requests and writes the same answers.
//!
//! Each layout's table is a macro in its group's adapter file
//! (`numbered_volume!` and so on) that hands the table to another, like
//! the RPC lists of `crate::rpcs`:
//!
//! ```text
//! /// The adapter's docs.
//! NumberedVolume: VolumeApi in crate::wire::volume::v2alpha1;
//!
//! // An RPC of this layout: each request field made of an argument by a
//! // field kind (`crate::adapter::fields`), each answer field read by one,
//! // and the answer made of the answer fields (a pattern the server
//! // takes apart again, in parentheses).
//! fn get_volume_stats(volume: &VolumeId) -> VolumeStats
//!     = GetVolumeStats: GetVolumeStatsRequest { volume_id: volume as VolumeText }
//!     -> GetVolumeStatsResponse { total_bytes: Bytes, used_bytes: Bytes }
//!     => (VolumeStats { total_bytes, used_bytes });
//!
//! // Fields only the client sets (after `;`), and the legacy `error`
//! // field of the oldest answers:
//! fn mkdir(path: &WindowsPath) -> ()
//!     = Mkdir: MkdirRequest { path: path as PathText; context: path_context(path) }
//!     -> MkdirResponse {} with legacy error => ();
//!
//! // An operation no version of the layout has:
//! fn rmdir_contents(path: &WindowsPath) -> () = absent RmdirContents;
//!
//! // Written by hand on both sides: the adapter's method `list_volumes`
//! // (same arguments) and the server's `list_volumes(op, body)` serve
//! // these operations.
//! fn list_volumes_on_disk(disk: u32, partition: Option<u32>) -> Vec<VolumeId>
//!     = by hand list_volumes: ListVolumesOnDisk | ListVolumesOnPartition;
//! ```
//!
//! The methods come in the trait's order. A method the table misses
//! fails clippy on the adapter (`missing_trait_methods`: the trait's
//! default would answer `NotImplemented`) and the build of the server,
//! whose match over the group's operations is exhaustive. The server
//! reads a request's fields in the table's order, which is the order in
//! which it refuses bad ones.

/// Makes a layout's adapter of its table: the struct (over a
/// [`WireClient`](super::WireClient)) and its group trait, one method per
/// entry.
macro_rules! wire_adapter {
    ({
        $(#[$doc:meta])*
        $layout:ident: $api:ident in $($wire:ident)::+;
        $($entries:tt)*
    }) => {
        $(#[$doc])*
        pub(super) struct $layout {
            wire: $crate::adapter::WireClient,
        }

        impl $layout {
            pub fn new(wire: $crate::adapter::WireClient) -> Self {
                Self { wire }
            }
        }

        $crate::adapter::layout::wire_adapter!(@methods $layout $api [$($wire)::+] [] $($entries)*);
    };
    (@methods $layout:ident $api:ident $wire:tt [$($done:tt)*]) => {
        #[async_trait::async_trait]
        #[deny(clippy::missing_trait_methods)]
        impl $api for $layout {
            $($done)*
        }
    };
    (@methods $layout:ident $api:ident $wire:tt [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty = absent $op:ident;
        $($rest:tt)*
    ) => {
        $crate::adapter::layout::wire_adapter!(@methods $layout $api $wire [$($done)*
            async fn $m(&self, $(_: $ty),*) -> $crate::error::Result<$answer_type> {
                Err(self.wire.unsupported($crate::capability::Operation::$op))
            }
        ] $($rest)*);
    };
    (@methods $layout:ident $api:ident $wire:tt [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty
            = by hand $hand:ident: $($op:ident)|+;
        $($rest:tt)*
    ) => {
        $crate::adapter::layout::wire_adapter!(@methods $layout $api $wire [$($done)*
            async fn $m(&self, $($arg: $ty),*) -> $crate::error::Result<$answer_type> {
                self.$hand($($arg),*).await
            }
        ] $($rest)*);
    };
    (@methods $layout:ident $api:ident [$($wire:ident)::+] [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty
            = $op:ident: $request:ident {
                $($field:ident: $value:ident as $kind:ty),* $(,)?
                $(; $($client_field:ident: $client_value:expr),+ $(,)?)?
            }
            -> $response:ident { $($answer_field:ident: $answer_kind:ty),* $(,)? }
            $(with legacy $legacy:ident)?
            => $answer:tt;
        $($rest:tt)*
    ) => {
        $crate::adapter::layout::wire_adapter!(@methods $layout $api [$($wire)::+] [$($done)*
            #[allow(unused_parens)]
            async fn $m(&self, $($arg: $ty),*) -> $crate::error::Result<$answer_type> {
                #[allow(unused_imports)]
                use $crate::adapter::fields::{AnswerField, LegacyError, RequestField};
                let operation = $crate::capability::Operation::$op;
                let request = $($wire)::+::$request {
                    $($field: <$kind as RequestField>::to_request($value)?,)*
                    $($($client_field: $client_value,)+)?
                };
                #[allow(unused_variables)]
                let response: $($wire)::+::$response = self.wire.call(operation, request).await?;
                $(
                    let error = response.$legacy;
                    <LegacyError as AnswerField>::from_answer(operation, stringify!($legacy), error)?;
                )?
                $(
                    let $answer_field = <$answer_kind as AnswerField>::from_answer(
                        operation,
                        stringify!($answer_field),
                        response.$answer_field,
                    )?;
                )*
                Ok($answer)
            }
        ] $($rest)*);
    };
}
pub(crate) use wire_adapter;
