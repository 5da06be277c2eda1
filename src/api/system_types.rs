//! The system group's values (its trait is generated, in `system.rs`).

/// When Windows starts a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartType {
    /// By the boot loader.
    Boot,
    /// During kernel initialisation.
    System,
    /// At system start.
    Automatic,
    /// On request.
    Manual,
    /// Never.
    Disabled,
}

/// The state a Windows service is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceStatus {
    /// The proxy could not tell.
    Unknown,
    /// Stopped.
    Stopped,
    /// Starting.
    StartPending,
    /// Stopping.
    StopPending,
    /// Running.
    Running,
    /// Resuming.
    ContinuePending,
    /// Pausing.
    PausePending,
    /// Paused.
    Paused,
}

/// A Windows service as [`SystemApi::get_service`](super::SystemApi::get_service) reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The display name.
    pub display_name: String,
    /// When it starts.
    pub start_type: StartType,
    /// What it is doing.
    pub status: ServiceStatus,
}
