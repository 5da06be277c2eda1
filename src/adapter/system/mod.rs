//! The system adapter: v1alpha1 is the only version. Its answer's enums
//! are read here: a number the client does not know is an invalid answer.

mod alpha_system;

pub(crate) use alpha_system::AlphaSystem;

use super::fields::AnswerField;
use crate::api::{ServiceStatus, StartType};
use crate::capability::Operation;
use crate::error::{Error, Result};
use crate::wire::system::v1alpha1 as wire;

/// A service's start type, as its number.
pub(crate) struct StartTypeNumber;

impl AnswerField for StartTypeNumber {
    type Value = StartType;
    type Wire = i32;

    fn from_answer(operation: Operation, _: &'static str, number: i32) -> Result<StartType> {
        use wire::StartType as W;
        match W::try_from(number) {
            Ok(W::Boot) => Ok(StartType::Boot),
            Ok(W::System) => Ok(StartType::System),
            Ok(W::Automatic) => Ok(StartType::Automatic),
            Ok(W::Manual) => Ok(StartType::Manual),
            Ok(W::Disabled) => Ok(StartType::Disabled),
            Err(_) => Err(unknown(operation, "start type", number)),
        }
    }
}

/// A service's status, as its number.
pub(crate) struct StatusNumber;

impl AnswerField for StatusNumber {
    type Value = ServiceStatus;
    type Wire = i32;

    fn from_answer(operation: Operation, _: &'static str, number: i32) -> Result<ServiceStatus> {
        use wire::ServiceStatus as W;
        match W::try_from(number) {
            Ok(W::Unknown) => Ok(ServiceStatus::Unknown),
            Ok(W::Stopped) => Ok(ServiceStatus::Stopped),
            Ok(W::StartPending) => Ok(ServiceStatus::StartPending),
            Ok(W::StopPending) => Ok(ServiceStatus::StopPending),
            Ok(W::Running) => Ok(ServiceStatus::Running),
            Ok(W::ContinuePending) => Ok(ServiceStatus::ContinuePending),
            Ok(W::PausePending) => Ok(ServiceStatus::PausePending),
            Ok(W::Paused) => Ok(ServiceStatus::Paused),
            Err(_) => Err(unknown(operation, "service status", number)),
        }
    }
}

/// The error for an enum's number the client does not know.
fn unknown(operation: Operation, what: &str, number: i32) -> Error {
    Error::invalid_response(operation, format!("unknown {what} {number}"))
}
