//! The fake proxy's server of the system layout (v1alpha1), generated
//! from the catalogue (`alpha_system.rs`), and how it writes the group's
//! enums.

mod alpha_system;

pub(super) use alpha_system::AlphaSystemServer;

use super::fields::WriteAnswer;
use crate::adapter::system::{StartTypeNumber, StatusNumber};
use crate::api::{ServiceStatus, StartType};
use crate::wire::system::v1alpha1 as wire;

impl WriteAnswer for StartTypeNumber {
    type Value = StartType;
    type Wire = i32;

    fn to_answer(value: StartType) -> i32 {
        use wire::StartType as W;
        let number = match value {
            StartType::Boot => W::Boot,
            StartType::System => W::System,
            StartType::Automatic => W::Automatic,
            StartType::Manual => W::Manual,
            StartType::Disabled => W::Disabled,
        };
        number as i32
    }
}

impl WriteAnswer for StatusNumber {
    type Value = ServiceStatus;
    type Wire = i32;

    fn to_answer(value: ServiceStatus) -> i32 {
        use wire::ServiceStatus as W;
        let number = match value {
            ServiceStatus::Unknown => W::Unknown,
            ServiceStatus::Stopped => W::Stopped,
            ServiceStatus::StartPending => W::StartPending,
            ServiceStatus::StopPending => W::StopPending,
            ServiceStatus::Running => W::Running,
            ServiceStatus::ContinuePending => W::ContinuePending,
            ServiceStatus::PausePending => W::PausePending,
            ServiceStatus::Paused => W::Paused,
        };
        number as i32
    }
}
