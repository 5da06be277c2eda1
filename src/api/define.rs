//! The macro that makes a group trait of its RPC list.
//!
//! Each group defines its RPCs once, as a list (`disk_rpcs!` in
//! `src/rpcs/disk.rs`, and so on): per method its arguments, its answer, the
//! [`Operation`](crate::Operation) it is (its deadline, retry rule, metrics
//! label and span all follow from that), the checks its arguments get
//! before anything is sent, and, rarely, a default body. The list is
//! handed to a macro: [`group_trait`] here makes the public trait; the
//! client makes the handle that runs each method through its group's
//! lookout (`src/client/handles.rs`); `capability` makes the operation
//! table, and `testing::sample` a call of each operation (see
//! `src/rpcs/mod.rs`). A method added to the list is in each, with the
//! same operation; none can miss it.

/// Makes the public group trait of an RPC list: each method's default body
/// answers [`Error::NotImplemented`](crate::Error::NotImplemented) with the
/// method's operation, unless the list gives a default.
macro_rules! group_trait {
    ({
        $(#[$trait_attr:meta])*
        trait $trait:ident: $group:ident => $group_operation:ident;
        $(
            $(#[$attr:meta])*
            fn $method:ident(&$self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $answer:ty
                = $(by $select:expr =>)? {
                    $( $(#[$doc:meta])* $op:ident = $name:literal, $effect:ident,
                        [$( $since:ident => $support:expr ),+ $(,)?] );+ $(;)?
                }
                $(check $check:block)?
                $(default $default:block)?;
        )+
    }) => {
        $(#[$trait_attr])*
        #[async_trait::async_trait]
        // The defaults answer `NotImplemented`, whatever the arguments.
        #[allow(unused_variables)]
        pub trait $trait: Send + Sync {
            $(
                $(#[$attr])*
                async fn $method(&$self $(, $arg: $ty)*) -> $crate::error::Result<$answer> {
                    $crate::api::define::group_trait!(
                        @default $crate::capability::operation_of!([$($select)?] [$($op)+])
                        $(, $default)?
                    )
                }
            )+
        }
    };
    (@default $operation:expr) => {
        $crate::api::not_implemented($operation)
    };
    (@default $operation:expr, $default:block) => {
        $default
    };
}

pub(crate) use group_trait;
