//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current.
//!
//! The methods are not written here: each group's RPC list
//! (`crate::rpcs`) is handed to [`relay!`], so every method is
//! one call of [`Handle::run`] with the operation the list gives it, whose
//! deadline, retry rule, metrics label and span apply, after the argument
//! checks the list gives it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::adapter::FromConnection;
use crate::api::{
    check_name, check_target, list_volumes_operation, DiskApi, DiskIds, DiskLocation,
    FilesystemApi, IscsiApi, IscsiAuth, Secret, ServiceInfo, SmbApi, SmbMapping, SmbRemotePath,
    SystemApi, TargetPortal, VolumeApi, VolumeId, VolumeStats, WindowsPath,
};
use crate::capability::{operation_of, Operation};
use crate::error::Result;
use crate::rpcs::{disk_rpcs, filesystem_rpcs, iscsi_rpcs, smb_rpcs, system_rpcs, volume_rpcs};

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

impl<A: ?Sized + FromConnection + Send + Sync + 'static> Handle<A> {
    /// Runs `call` on the group's current adapter as `operation`, unless
    /// its argument checks refused it (`checked`).
    async fn run<T, F, Fut>(&self, operation: Operation, checked: Result<()>, call: F) -> Result<T>
    where
        F: Fn(Arc<A>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.lookout
            .run(operation, self.options, checked, call)
            .await
    }
}

/// Implements a group trait for its handle from the group's RPC list: each
/// method checks its arguments, then runs as its operation. A refused
/// argument is the call's answer at once, before any wait for the proxy,
/// and is recorded (metrics) as the call's outcome; nothing is sent.
macro_rules! relay {
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
        #[async_trait]
        impl $trait for Handle<dyn $trait> {
            $(
                async fn $method(&$self $(, $arg: $ty)*) -> Result<$answer> {
                    let operation = operation_of!([$($select)?] [$($op)+]);
                    let checked: Result<()> = Ok(()) $(.and_then(|()| $check))?;
                    $self
                        .run(operation, checked, |api| async move {
                            api.$method($($arg),*).await
                        })
                        .await
                }
            )+
        }
    };
}

disk_rpcs!(relay);
filesystem_rpcs!(relay);
smb_rpcs!(relay);
volume_rpcs!(relay);
iscsi_rpcs!(relay);
system_rpcs!(relay);
