//! Windows named pipe client.

use std::io;
use std::time::Duration;

use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient};
use tokio::time::{sleep, Instant};

/// `ERROR_PIPE_BUSY`: every instance of the pipe is connected to another
/// client; the server will create a new one shortly.
const ERROR_PIPE_BUSY: i32 = 231;

/// `SECURITY_ANONYMOUS`: the server may not identify or impersonate us.
/// CSI Proxy's Go client opens its pipes the same way; tokio adds
/// `SECURITY_SQOS_PRESENT` so that the flag takes effect.
const SECURITY_ANONYMOUS: u32 = 0;

/// How long to sleep between two tries at a busy pipe.
const BUSY_POLL: Duration = Duration::from_millis(10);

/// Opens `name`, waiting up to `timeout` while the pipe is busy. A missing
/// pipe fails at once with `NotFound`.
pub(super) async fn open(name: &str, timeout: Duration) -> io::Result<NamedPipeClient> {
    let deadline = Instant::now() + timeout;
    loop {
        let opened = ClientOptions::new()
            .security_qos_flags(SECURITY_ANONYMOUS)
            .open(name);
        match opened {
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) => {
                if Instant::now() + BUSY_POLL > deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("pipe stayed busy for {timeout:?}"),
                    ));
                }
                sleep(BUSY_POLL).await;
            }
            other => return other,
        }
    }
}
