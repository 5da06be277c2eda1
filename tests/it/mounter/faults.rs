//! The mounter under a proxy stopped at every host step (issue 43's fault
//! test): to be written.
