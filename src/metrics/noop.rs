//! Without the `metrics` feature: the same calls, recording nothing, so
//! that the rest of the crate has no feature switches of its own.

use crate::capability::Operation;
use crate::error::Result;
use crate::group::ApiGroup;
use crate::version::ApiVersion;

pub(crate) struct CallTimer;

impl CallTimer {
    pub fn start(_: &CallSeries, _: Operation, _: &(dyn Fn() -> CallVersion + Sync)) -> Self {
        CallTimer
    }

    pub fn finish<T>(self, _: &Result<T>) {}
}

pub(crate) struct CallSeries;

impl CallSeries {
    pub fn new(_: ApiGroup) -> Self {
        Self
    }
}

pub(crate) enum CallVersion {
    Negotiated(#[allow(dead_code)] Option<ApiVersion>),
    Direct(#[allow(dead_code)] crate::served_by::ServedBy),
}

pub(crate) fn negotiated(_: ApiGroup, _: &'static str) {}

pub(crate) fn passed_over(_: ApiGroup, _: ApiVersion, _: super::PassedOver) {}

pub(crate) fn version_changed(_: ApiGroup, _: Option<ApiVersion>, _: Option<ApiVersion>) {}

pub(crate) struct GroupGauges;

impl GroupGauges {
    pub fn new(_: ApiGroup) -> Self {
        Self
    }

    pub fn show(&self, _: Option<ApiVersion>) {}
}
