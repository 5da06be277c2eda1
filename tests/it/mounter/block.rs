//! Block volumes: stage, publish, expand, stats, unpublish, unstage.

mod in_flight;
mod lifecycle;
mod stage;
