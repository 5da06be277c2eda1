//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current.

use std::sync::Arc;

use async_trait::async_trait;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::api::{
    disk_group, filesystem_group, iscsi_group, smb_group, system_group, volume_group, DiskApi,
    FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi,
};
use crate::capability::Operation as Op;
use crate::error::Result;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

/// Implements a group's public trait on [`Handle`], from the group's
/// declaration (see `api::declare`): every method runs the same method of
/// the current adapter through the lookout, as the declared operation, whose
/// deadline and retry rules apply.
macro_rules! handle_impl {
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
        #[async_trait]
        impl $api for Handle<dyn $api> {
            $(
                async fn $method(&$self $(, $arg: $ty)*) -> Result<$ret> {
                    #[allow(unused_imports)]
                    use Op::*;
                    $self.lookout
                        .run($op, $self.options, |api| async move { api.$method($($arg),*).await })
                        .await
                }
            )+
        }
    };
}

disk_group!(handle_impl);
volume_group!(handle_impl);
filesystem_group!(handle_impl);
smb_group!(handle_impl);
iscsi_group!(handle_impl);
system_group!(handle_impl);
