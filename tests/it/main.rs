//! The integration tests, in one binary (one link, one build): each module
//! is a topic, `common` holds the fake nodes and helpers they share. The
//! few that must run apart are their own binaries: `generated_code` (writes
//! files), `shipped_build` (builds a driver's crate in its own process),
//! `soak` (long, one at a time) and `traces` (a global tracing subscriber).

mod common;

mod api;
mod bad_input;
mod capabilities;
mod cli;
mod conformance;
mod connection;
mod csi_service;
mod definitions;
mod delivery;
mod deployment;
mod docs_paths;
mod edges;
mod fake_harness;
mod foreign_objects;
mod host_process;
mod hostile_proxy;
mod layers;
mod malformed_responses;
mod messages;
mod metrics;
mod misbehaving_host;
mod mounter;
mod negotiation;
mod node_plugin;
mod partial_proxy;
mod recipes;
mod resilience;
mod rpc_docs;
mod second_instance;
mod translation;
mod wire_layout;
