//! Taking a secret out of an error. CSI Proxy may echo what it was sent
//! (a failed `New-SmbGlobalMapping` quotes its command line), and the text
//! can reach the caller in any variant: a host message, a transport
//! failure's status, a malformed-response reason. The secret may show as
//! is or escaped, once or twice over.

use std::cmp::Reverse;
use std::fmt;
use std::sync::Arc;

use crate::api::Secret;
use crate::error::{BoxedSource, Error};

/// What takes a secret's place.
const MASK: &str = "***";

/// `error` with every form of `secret` replaced by `***`, in every variant's
/// text and in its source. A source that showed the secret becomes its
/// text, cleaned; others stay as they were.
pub(crate) fn redact(error: Error, secret: &Secret) -> Error {
    if secret.is_empty() {
        return error;
    }
    let forms = forms(secret.expose());
    let clean = |text: String| mask(&forms, text);
    match error {
        Error::Host {
            operation,
            code,
            message,
            os_code,
            return_value,
        } => Error::Host {
            operation,
            code,
            message: clean(message),
            os_code,
            return_value,
        },
        Error::InvalidResponse { operation, reason } => Error::InvalidResponse {
            operation,
            reason: clean(reason),
        },
        Error::NotFound { what } => Error::NotFound { what: clean(what) },
        Error::Conflict { path, found } => Error::Conflict {
            path,
            found: clean(found),
        },
        Error::NotStaged { path, found } => Error::NotStaged {
            path,
            found: clean(found),
        },
        Error::Ambiguous { what, candidates } => Error::Ambiguous {
            what: clean(what),
            candidates: candidates.into_iter().map(clean).collect(),
        },
        Error::InProgress { what } => Error::InProgress { what: clean(what) },
        Error::NotOurs { what, why } => Error::NotOurs {
            what: clean(what),
            why: clean(why),
        },
        Error::InvalidArgument { what, reason } => Error::InvalidArgument {
            what,
            reason: clean(reason),
        },
        Error::Transport {
            address,
            operation,
            maybe_sent,
            source,
        } => Error::Transport {
            address,
            operation,
            maybe_sent,
            source: clean_source(&forms, source),
        },
        Error::PermissionDenied { address, source } => Error::PermissionDenied {
            address,
            source: clean_source(&forms, source),
        },
        // No text that could hold a request's data.
        error @ (Error::NotServed { .. }
        | Error::UntrustedServer { .. }
        | Error::Unsupported { .. }
        | Error::NotImplemented { .. }
        | Error::Timeout { .. }
        | Error::ConnectTimeout { .. }
        | Error::Configuration { .. }
        | Error::HostBusy { .. }) => error,
    }
}

/// The forms a secret can take in a message, longest first: as is, escaped
/// as Go's `%q` and `%+q` do (how the proxy quotes command output), as
/// Rust's `{:?}` does (how a gRPC status shows its message), as JSON does
/// (with or without escaping what is not ASCII), as its bytes escaped
/// (`\xc3\xa9`, how a header value or a byte string shows), and each of
/// those escaped once more.
fn forms(secret: &str) -> Vec<String> {
    let escapes: [fn(&str) -> String; 8] = [
        go_quoted,
        go_quoted_ascii,
        rust_debug,
        json_escaped,
        |s| json_escaped_ascii(s, false),
        |s| json_escaped_ascii(s, true),
        bytes_escaped,
        header_value_debug,
    ];
    let mut forms = vec![secret.to_owned()];
    let mut last = 0..forms.len();
    for _ in 0..2 {
        let start = forms.len();
        for i in last {
            for escape in escapes {
                let form = escape(&forms[i]);
                if !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
        last = start..forms.len();
    }
    forms.sort_by_key(|form| Reverse(form.len()));
    forms
}

/// `text` with each of `forms` masked, longest first.
fn mask(forms: &[String], text: String) -> String {
    forms.iter().fold(text, |text, form| {
        if text.contains(form.as_str()) {
            text.replace(form.as_str(), MASK)
        } else {
            text
        }
    })
}

/// `source` itself if no form of the secret shows in its text or `Debug`
/// form; otherwise its text, the secret masked.
fn clean_source(forms: &[String], source: BoxedSource) -> BoxedSource {
    let text = crate::error::in_words(&*source);
    let shows = |text: &str| forms.iter().any(|form| text.contains(form.as_str()));
    if shows(&text) || shows(&format!("{source:?}")) {
        Arc::new(Redacted(mask(forms, text)))
    } else {
        source
    }
}

/// The text of an error that showed a secret, with the secret masked.
#[derive(Debug)]
struct Redacted(String);

impl fmt::Display for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Redacted {}

/// The inside of Go's `strconv.Quote(s)`.
fn go_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str(r"\a"),
            '\u{8}' => out.push_str(r"\b"),
            '\u{c}' => out.push_str(r"\f"),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            '\u{b}' => out.push_str(r"\v"),
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The inside of Go's `strconv.QuoteToASCII(s)` (`%+q`): as `%q`, and
/// every character past ASCII as `\u00e9`, or `\U0001f600` past 16 bits.
fn go_quoted_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in go_quoted(s).chars() {
        match c as u32 {
            0..0x80 => out.push(c),
            code @ 0x80..0x10000 => out.push_str(&format!("\\u{code:04x}")),
            code => out.push_str(&format!("\\U{code:08x}")),
        }
    }
    out
}

/// The inside of a JSON string holding `s` written as ASCII only (what
/// many encoders do, PowerShell's among them): every character past
/// ASCII as `\u00e9`, in UTF-16 surrogates past 16 bits, with lower or
/// `upper` case hex digits.
fn json_escaped_ascii(s: &str, upper: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in json_escaped(s).chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        for unit in c.encode_utf16(&mut [0; 2]) {
            if upper {
                out.push_str(&format!("\\u{unit:04X}"));
            } else {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// `s`'s bytes as Rust escapes a byte string (`\xc3\xa9` past ASCII).
fn bytes_escaped(s: &str) -> String {
    s.as_bytes().escape_ascii().to_string()
}

/// `s` as the `Debug` of an HTTP header value shows it (the metadata of a
/// gRPC status): `"` escaped, and every byte that is no visible ASCII (a
/// tab aside) as `\x` and its hex digits, unpadded.
fn header_value_debug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\t' | 0x20..0x7f => out.push(char::from(b)),
            b => out.push_str(&format!("\\x{b:x}")),
        }
    }
    out
}

/// The inside of Rust's `format!("{s:?}")`.
fn rust_debug(s: &str) -> String {
    let quoted = format!("{s:?}");
    quoted[1..quoted.len() - 1].to_owned()
}

/// The inside of a JSON string holding `s`.
fn json_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str(r"\\"),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            '\u{8}' => out.push_str(r"\b"),
            '\u{c}' => out.push_str(r"\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Operation;
    use crate::error::Code;

    const OP: Operation = Operation::NewSmbGlobalMapping;
    const SECRET: &str = "Zq\"9\\9\n";

    fn leaks(error: &Error) -> bool {
        let text = format!("{error} {error:?}");
        text.contains("Zq") || text.contains('9')
    }

    #[test]
    fn each_escaping_is_the_languages_own() {
        assert_eq!(go_quoted("a\"b\\c\n\u{1}é"), r#"a\"b\\c\n\x01é"#);
        assert_eq!(rust_debug("a\"b\\c\n\u{1}"), r#"a\"b\\c\n\u{1}"#);
        assert_eq!(json_escaped("a\"b\\c\n\u{1}"), r#"a\"b\\c\n\u0001"#);
    }

    #[test]
    fn every_variant_with_text_is_cleaned() {
        let secret = Secret::new(SECRET);
        let status = tonic::Status::unavailable(format!("mapping failed for {SECRET}"));
        let errors = [
            Error::Host {
                operation: OP,
                code: Code::Unknown,
                message: format!("bad password \"{}\"", go_quoted(SECRET)),
                os_code: None,
                return_value: None,
            },
            Error::InvalidResponse {
                operation: OP,
                reason: format!("{SECRET:?} is not a number"),
            },
            Error::NotFound {
                what: format!("share for {}", json_escaped(SECRET)),
            },
            Error::invalid_argument("password", format!("{SECRET} is too short")),
            Error::Transport {
                address: "pipe".into(),
                operation: Some(OP),
                maybe_sent: true,
                source: Arc::new(status.clone()),
            },
            Error::PermissionDenied {
                address: "pipe".into(),
                source: Arc::new(std::io::Error::other(format!("echo: {SECRET:?}"))),
            },
        ];
        for error in errors {
            assert!(leaks(&error), "the test must leak first: {error:?}");
            let clean = redact(error, &secret);
            assert!(!leaks(&clean), "{clean} {clean:?}");
            assert!(format!("{clean}").contains(MASK), "{clean}");
        }
    }

    #[test]
    fn a_masked_transport_failure_reads_in_words() {
        // What tonic makes of a failed channel whose error echoes the
        // secret: tonic's own text of it ends with the source's `Debug`.
        let echo = std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            format!("mapping {SECRET} broke"),
        );
        let status = tonic::Status::from_error(Box::new(echo));
        let error = Error::Transport {
            address: "pipe".into(),
            operation: Some(OP),
            maybe_sent: true,
            source: Arc::new(status),
        };
        let clean = redact(error, &Secret::new(SECRET));
        assert!(!leaks(&clean), "{clean} {clean:?}");
        let message = tonic::Status::from(clean).message().to_owned();
        assert_eq!(
            message,
            "smb NewSmbGlobalMapping failed at pipe: mapping *** broke (broken pipe); the request \
             may have reached CSI Proxy, so it may have run"
        );
    }

    #[test]
    fn twice_escaped_forms_are_cleaned() {
        // A Go `%q` echo shown again through a status's `{:?}`.
        let message = rust_debug(&format!("bad password \"{}\"", go_quoted(SECRET)));
        let error = Error::Host {
            operation: OP,
            code: Code::Unknown,
            message,
            os_code: None,
            return_value: None,
        };
        assert!(!leaks(&redact(error, &Secret::new(SECRET))));
    }

    #[test]
    fn forms_past_ascii_are_the_encoders_own() {
        assert_eq!(go_quoted_ascii("é\"😀"), r#"\u00e9\"\U0001f600"#);
        assert_eq!(json_escaped_ascii("é😀", false), r"\u00e9\ud83d\ude00");
        assert_eq!(json_escaped_ascii("é", true), r"\u00E9");
        assert_eq!(bytes_escaped("é\r\""), r#"\xc3\xa9\r\""#);
        assert_eq!(header_value_debug("é\\\""), r#"\xc3\xa9\\""#);
    }

    #[test]
    fn a_secret_past_ascii_is_masked_in_every_escaping() {
        let secret = "s3cr3t\"Pa55é%w\rd";
        let texts = [
            go_quoted_ascii(secret),
            json_escaped_ascii(secret, false),
            json_escaped_ascii(secret, true),
            bytes_escaped(secret),
            header_value_debug(secret),
            rust_debug(&go_quoted_ascii(secret)),
            json_escaped(&json_escaped_ascii(secret, false)),
        ];
        let forms = forms(secret);
        for text in texts {
            let masked = mask(&forms, format!("echo: [{text}]"));
            assert_eq!(masked, "echo: [***]", "{text}");
        }
    }

    #[test]
    fn a_status_whose_metadata_echoes_the_secret_is_cleaned() {
        let secret = "s3cr3t\"Pa55é%w\rd";
        let mut status = tonic::Status::unknown("mapping failed");
        let echo = secret.replace('\r', " ");
        let value = tonic::metadata::MetadataValue::try_from(echo.as_bytes()).unwrap();
        status.metadata_mut().insert("x-echo", value);
        let error = Error::Transport {
            address: "pipe".into(),
            operation: Some(OP),
            maybe_sent: true,
            source: Arc::new(status),
        };
        let clean = redact(error, &Secret::new(&echo));
        let text = format!("{clean} {clean:?}");
        assert!(!text.contains("s3cr3t"), "{text}");
    }

    #[test]
    fn what_shows_no_secret_is_left_as_it_was() {
        let source: BoxedSource = Arc::new(std::io::Error::other("broken pipe"));
        let error = Error::Transport {
            address: "pipe".into(),
            operation: Some(OP),
            maybe_sent: true,
            source: source.clone(),
        };
        let Error::Transport { source: kept, .. } = redact(error, &Secret::new(SECRET)) else {
            panic!("still a transport error")
        };
        assert!(Arc::ptr_eq(&kept, &source), "the original source is kept");
        let empty = Error::invalid_argument("x", "y");
        assert!(matches!(
            redact(empty, &Secret::default()),
            Error::InvalidArgument { .. }
        ));
    }
}
