//! The CSI codes the mounter's errors answer per call, and disk selectors
//! on a node whose OS disk shares a LUN: to be written.
