//! Whether a connection whose answer was read to its end may carry another request: nothing
//! may be waiting on it. Bytes after an answer (a provider out of step, an answer nobody
//! asked for) would be read as the next request's answer. fcm's own buffer is one place they
//! wait; under TLS there is another: rustls decrypts whole records, so it may hold plaintext
//! the link has not taken yet. A TLS link is asked for input with a wait of zero, which the
//! TCP link under it refuses before reading the socket: only what rustls already holds can
//! come back.

use std::time::Duration;

use ureq::unversioned::transport::{NextTimeout, Transport};

/// Whether `link` holds nothing after the answer just read (and, under TLS, has not been
/// closed by the provider meanwhile).
pub(super) fn nothing_waits(link: &mut dyn Transport) -> bool {
    if !link.buffers().input().is_empty() {
        return false;
    }
    if !link.is_tls() {
        // Bytes in the socket are seen when the connection is next taken (a peek).
        return true;
    }
    let now = NextTimeout {
        after: Duration::ZERO.into(),
        ..NextTimeout::default()
    };
    match link.await_input(now) {
        // Plaintext that arrived with the answer, or the provider's close.
        Ok(_) => false,
        Err(ureq::Error::Timeout(_)) => true,
        Err(ureq::Error::Io(e)) => matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::transport::{Buffers, LazyBuffers};

    /// A link that says whether it is TLS, and what a look for more input finds: bytes
    /// (as rustls holding decrypted plaintext), the close, or nothing before the wait ends.
    #[derive(Debug)]
    struct Link {
        tls: bool,
        holds: &'static [u8],
        closed: bool,
        buffers: LazyBuffers,
        looked: usize,
    }

    impl Link {
        fn new(tls: bool, holds: &'static [u8], closed: bool) -> Link {
            Link {
                tls,
                holds,
                closed,
                buffers: LazyBuffers::new(1024, 1024),
                looked: 0,
            }
        }
    }

    impl Transport for Link {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }
        fn transmit_output(&mut self, _: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            Ok(())
        }
        fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
            self.looked += 1;
            assert!(timeout.after.is_zero(), "a look that never waits");
            if self.closed {
                return Ok(false);
            }
            if self.holds.is_empty() {
                return Err(ureq::Error::Timeout(timeout.reason));
            }
            let room = self.buffers.input_append_buf();
            room[..self.holds.len()].copy_from_slice(self.holds);
            self.buffers.input_appended(self.holds.len());
            Ok(true)
        }
        fn is_open(&mut self) -> bool {
            !self.closed
        }
        fn is_tls(&self) -> bool {
            self.tls
        }
    }

    #[test]
    fn a_link_is_reused_only_when_nothing_waits_on_it() {
        let mut clean = Link::new(true, b"", false);
        assert!(nothing_waits(&mut clean));
        assert_eq!(clean.looked, 1);
        let mut decrypted = Link::new(true, b"HTTP/1.1 200 OK\r\n", false);
        assert!(!nothing_waits(&mut decrypted), "plaintext rustls held");
        let mut closed = Link::new(true, b"", true);
        assert!(!nothing_waits(&mut closed), "closed by the provider");
        let mut plain = Link::new(false, b"never looked at", false);
        assert!(nothing_waits(&mut plain));
        assert_eq!(plain.looked, 0, "a TCP link is peeked when next taken");
        let mut buffered = Link::new(false, b"", false);
        let room = buffered.buffers.input_append_buf();
        room[..3].copy_from_slice(b"abc");
        buffered.buffers.input_appended(3);
        assert!(!nothing_waits(&mut buffered), "bytes in fcm's own buffer");
    }
}
