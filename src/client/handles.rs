//! The handles `CsiProxy` gives out: each group trait implemented by running
//! every call through the group's [`Lookout`] and its call policy, which
//! add deadlines, retries and looking for the proxy around whichever
//! adapter is current.

use std::sync::Arc;

use super::lookout::Lookout;
use super::options::CallOptions;
use crate::api::{
    disk_group, filesystem_group, impl_group_api, iscsi_group, smb_group, system_group,
    volume_group, DiskApi, FilesystemApi, IscsiApi, SmbApi, SystemApi, VolumeApi,
};
use crate::capability::Operation as Op;

/// A group's lookout with the options of the calls made through it.
pub(crate) struct Handle<A: ?Sized> {
    pub lookout: Arc<Lookout<A>>,
    pub options: CallOptions,
}

/// A method body for `impl_group_api!` on [`Handle`]: the same method of
/// the current adapter, run through the lookout as the declared operation,
/// whose deadline and retry rules apply.
macro_rules! through_lookout {
    ($self:ident, $backend:ident, $method:ident, $op:expr, ($($arg:ident),*)) => {{
        #[allow(unused_imports)]
        use Op::*;
        $self
            .lookout
            .run($op, $self.options, |api| async move { api.$method($($arg),*).await })
            .await
    }};
}

disk_group!(impl_group_api(Handle<dyn DiskApi>, through_lookout));
volume_group!(impl_group_api(Handle<dyn VolumeApi>, through_lookout));
filesystem_group!(impl_group_api(Handle<dyn FilesystemApi>, through_lookout));
smb_group!(impl_group_api(Handle<dyn SmbApi>, through_lookout));
iscsi_group!(impl_group_api(Handle<dyn IscsiApi>, through_lookout));
system_group!(impl_group_api(Handle<dyn SystemApi>, through_lookout));
