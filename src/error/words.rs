//! How an error reads: its parts in words, and a cause chain as one
//! sentence for status messages.

use tonic::{Code, Status};

use super::BoxedSource;

/// The endpoints a [`Error::NotServed`] tried, in words.
pub(super) fn tried_text(tried: &[String]) -> String {
    match tried {
        [] => "no endpoint of it was tried".to_owned(),
        tried => format!("nothing answered at {}", tried.join(", ")),
    }
}

/// A host failure's code, in words: nothing for `Unknown` (how CSI Proxy
/// reports nearly every failure), else its name in the gRPC spec.
pub(super) fn code_text(code: Code) -> String {
    match code {
        Code::Unknown => String::new(),
        code => format!(" (code {})", code_name(code)),
    }
}

/// A code's name in the gRPC spec, as the CSI spec writes it too.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A size in bytes, in words: `10 GiB`, or `10.5 GiB (11274289152 bytes)`
/// when it is not a whole number of its unit (a tenth rounded down).
pub(super) fn size_text(bytes: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let (whole, rest) = (bytes >> shift, bytes % (1 << shift));
        match (whole, rest) {
            (0, _) => continue,
            (whole, 0) => return format!("{whole} {unit}"),
            (whole, rest) => {
                let tenths = (rest * 10) >> shift;
                return format!("{whole}.{tenths} {unit} ({bytes} bytes)");
            }
        }
    }
    format!("{bytes} bytes")
}

/// `error` and its causes in words, as one line: each one's text, joined
/// by `: `, each left out when the text so far already says it. Never a
/// `Debug` output: a gRPC status is its message (tonic's own text of a
/// status ends with its source's `Debug`), an HTTP/2 failure of the
/// connection is what happened to the connection.
pub(crate) fn in_words(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![one_in_words(error)];
    let mut cause = error.source();
    while let Some(inner) = cause {
        let words = one_in_words(inner);
        let said = parts.join(": ");
        match parts.last_mut() {
            _ if words.is_empty() || said.contains(&words) => {}
            // The cause says the same as the last text, and more (a
            // status whose message is its source's text, which names the
            // kind of failure too).
            Some(last) if words.contains(last.as_str()) => *last = words,
            _ => parts.push(words),
        }
        cause = inner.source();
    }
    parts.retain(|part| !part.is_empty());
    parts.join(": ")
}

/// One error's own text, without its causes, in words.
fn one_in_words(error: &(dyn std::error::Error + 'static)) -> String {
    // An error's shared source shows as the `Arc` around it.
    if let Some(shared) = error.downcast_ref::<BoxedSource>() {
        return one_in_words(&**shared);
    }
    if let Some(status) = error.downcast_ref::<Status>() {
        return match status.message() {
            "" => status.code().description().to_owned(),
            message => message.to_owned(),
        };
    }
    if let Some(h2) = error.downcast_ref::<h2::Error>() {
        return h2_in_words(h2);
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        return io_in_words(io);
    }
    error.to_string()
}

/// An HTTP/2 failure in words: the I/O error under it, or who reset the
/// stream or closed the connection, and why.
fn h2_in_words(error: &h2::Error) -> String {
    if let Some(io) = error.get_io() {
        return io_in_words(io);
    }
    let who = if error.is_remote() {
        "CSI Proxy"
    } else {
        "the client"
    };
    match error.reason() {
        Some(reason) if error.is_go_away() => {
            format!("{reason} (the connection was closed by {who})")
        }
        Some(reason) if error.is_reset() => format!("{reason} (the stream was reset by {who})"),
        Some(reason) => format!("HTTP/2 protocol error: {reason}"),
        None => error.to_string(),
    }
}

/// An I/O error in words: its text, and what kind of failure it is when
/// the text does not say it (`connection closed (broken pipe)`).
fn io_in_words(error: &std::io::Error) -> String {
    let text = error.to_string();
    let kind = error.kind();
    if error.raw_os_error().is_some() || kind == std::io::ErrorKind::Other {
        return text;
    }
    let kind = kind.to_string();
    if text.to_lowercase().contains(&kind) || kind.contains("error") {
        text
    } else {
        format!("{text} ({kind})")
    }
}
