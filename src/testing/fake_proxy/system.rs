//! Server side of the system layout (v1alpha1), made of the adapter's
//! table (`src/adapter/system.rs`).

use std::sync::Arc;

use super::layout::wire_server;
use crate::adapter::fields::*;
use crate::adapter::system::{system_layout, StartTypeNumber, StatusNumber};
use crate::api::{ServiceInfo, SystemApi};

pub(super) struct System {
    pub api: Arc<dyn SystemApi>,
}

system_layout!(wire_server System: SystemOperation);
