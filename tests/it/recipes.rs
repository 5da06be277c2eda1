//! To be written (issue 48).
