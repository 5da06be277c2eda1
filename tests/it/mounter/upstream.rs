//! The mounter against a fake host that answers as upstream CSI Proxy's
//! code does: to be written.
