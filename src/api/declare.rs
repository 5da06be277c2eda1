//! What turns a group's one declaration into the code that must agree with
//! it.
//!
//! Each group is declared once, as a macro named after it (`disk_group!`
//! and so on, next to the group's types) that hands its method list to a
//! generator given as the first argument. The list reads like the trait:
//!
//! ```text
//! /// docs
//! pub trait DiskApi, backend DiskBackend {
//!     /// docs
//!     fn get_disk_state(&self, disk: u32) -> bool = GetDiskState;
//!     /// docs
//!     fn get_disk_number_by_name(&self, page83: &str) -> u32 = GetDiskNumberByName
//!         => { default body };
//! }
//! ```
//!
//! After `=` comes the `Operation` a call
//! is (a variant, or an expression of the arguments); after `=>`, the
//! public trait's default body when it is not "not implemented". Types are
//! written as full paths, since the generated code lands in other modules.
//!
//! The generators:
//! - `define_group_traits!`: the public trait, whose methods default to
//!   `Error::NotImplemented`, so mocks stay
//!   short, and the crate's own backend trait, with no defaults, which every
//!   backend the crate ships implements: a missing method does not compile;
//! - `impl_group_api!`: the public trait for a type, each method's body
//!   made by a macro given with the type: `to_backend!` forwards to the
//!   type's backend trait; `through_lookout!` (in `client::handles`) runs
//!   the handles `CsiProxy` gives out.

/// Defines a group's public trait and its backend trait.
macro_rules! define_group_traits {
    (()
        $(#[$trait_meta:meta])*
        pub trait $api:ident, backend $backend:ident {
            $(
                $(#[$meta:meta])*
                fn $method:ident(&$self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty = $op:expr
                    $(=> $default:block)?;
            )+
        }
    ) => {
        $(#[$trait_meta])*
        #[::async_trait::async_trait]
        pub trait $api: Send + Sync {
            $(
                $(#[$meta])*
                async fn $method(&$self $(, $arg: $ty)*) -> crate::error::Result<$ret> {
                    define_group_traits!(@default $($default)? {
                        let _ = ($($arg,)*);
                        Err(crate::error::Error::NotImplemented {
                            operation: {
                                #[allow(unused_imports)]
                                use crate::capability::Operation::*;
                                $op
                            },
                        })
                    })
                }
            )+
        }

        /// Every method of the public trait of the same name, with no
        /// defaults: what each backend the crate ships implements in full.
        #[::async_trait::async_trait]
        pub(crate) trait $backend: Send + Sync {
            $(
                async fn $method(&$self $(, $arg: $ty)*) -> crate::error::Result<$ret>;
            )+
        }
    };
    // The declared default body, or else the fallback.
    (@default $given:block $fallback:block) => { $given };
    (@default $fallback:block) => { $fallback };
}

/// Implements a group's public trait for `$type`, each method's body made
/// by the macro `$body` from the receiver, the backend trait, the method,
/// the declared operation and the arguments: `to_backend!` for the
/// crate's backends, `through_lookout!` for the handles.
macro_rules! impl_group_api {
    (($type:ty, $body:ident)
        $(#[$trait_meta:meta])*
        pub trait $api:ident, backend $backend:ident {
            $(
                $(#[$meta:meta])*
                fn $method:ident(&$self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty = $op:expr
                    $(=> $default:block)?;
            )+
        }
    ) => {
        #[::async_trait::async_trait]
        impl crate::api::$api for $type {
            $(
                async fn $method(&$self $(, $arg: $ty)*) -> crate::error::Result<$ret> {
                    $body!($self, $backend, $method, $op, ($($arg),*))
                }
            )+
        }
    };
}

/// A method body for `impl_group_api!`: the same method of the type's
/// backend trait.
macro_rules! to_backend {
    ($self:ident, $backend:ident, $method:ident, $op:expr, ($($arg:ident),*)) => {
        <Self as crate::api::$backend>::$method($self $(, $arg)*).await
    };
}

pub(crate) use {define_group_traits, impl_group_api, to_backend};
