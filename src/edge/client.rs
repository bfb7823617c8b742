//! One client connection, from its first byte to its close: read each request's head within
//! the request's deadline, admit it (`access`) before a byte of its body is read, read the
//! body, hand the request to its endpoint, and keep the connection for the next request.
//! A request that cannot be read or is refused gets its answer (in the envelope of its
//! path, once the path is known), and the connection lingers and closes.

use std::io::{BufRead, BufReader, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::edge::app::App;
use crate::edge::completion;
use crate::edge::connections::{ClientReader, Slot};
use crate::edge::endpoints::{self, error_protocol};
use crate::edge::http::{self, Head, ReadError, Request};
use crate::edge::reply::{Conn, Reply};
use crate::edge::request_id::request_id;
use crate::protocol::Protocol;
use crate::state::trace::{new_request_id, Outcome, Trace};

/// Largest request body accepted (413 beyond).
pub(super) const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// How long a refused request's unread bytes are drained before the connection closes.
const LINGER: Duration = Duration::from_secs(2);

/// Serves the requests of one connection until it closes.
pub(super) fn serve(stream: TcpStream, slot: &mut Slot, app: &Arc<App>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let client = ClientReader::new(read_half, app.idle_timeout);
    let mut reader = BufReader::with_capacity(16 * 1024, client);
    let mut conn = Conn::new(stream, true);
    loop {
        slot.stand_by();
        reader.get_mut().deadline = None;
        if reader.fill_buf().map_or(true, |b| b.is_empty()) {
            return;
        }
        // The first byte of a request starts its deadline.
        reader.get_mut().deadline = Some(Instant::now() + app.request_timeout);
        let head = http::read_head(&mut reader);
        if !slot.leave_standby() {
            return;
        }
        let head = match head {
            Ok(head) => head,
            Err(e) => return unreadable(conn, reader, slot, app, None, &e),
        };
        if let Err(denied) =
            crate::edge::access::admit(&head, app.token.as_deref(), &app.stop_key, app.address)
        {
            // Nothing of the body is read (nor `100 Continue` sent) for a refused request.
            conn.keep_alive = false;
            let mut trace = Trace::new(&request_id(&head), "", false);
            trace.outcome = Outcome::Rejected;
            let (status, kind) = denied.status();
            let proto = error_protocol(head.path());
            let reply = Reply::error(proto, status, &denied.to_string(), kind).with_trace(&trace);
            conn.send(reply, head.method() == "HEAD");
            return linger(conn, reader, slot);
        }
        let req = match http::read_body(&mut reader, &head, &mut conn.stream, MAX_REQUEST_BYTES) {
            Ok(body) => Request { head, body },
            Err(e) => return unreadable(conn, reader, slot, app, Some(&head), &e),
        };
        conn.keep_alive = req.head.keep_alive && !crate::edge::signals::stop_requested();
        if app.in_flight.fetch_add(1, Ordering::AcqRel) >= app.max_in_flight {
            app.in_flight.fetch_sub(1, Ordering::AcqRel);
            // The request was read: its answer carries its id, like every other answer.
            let proto = error_protocol(req.head.path());
            conn.send(Reply::overloaded(proto, &request_id(&req.head)), false);
        } else {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                endpoints::answer(&req, &mut conn, app)
            }));
            app.in_flight.fetch_sub(1, Ordering::AcqRel);
            if result.is_err() {
                eprintln!("fcm serve: a request handler panicked; the server keeps running");
                return;
            }
        }
        if !conn.keep_alive || conn.broken {
            return;
        }
    }
}

/// Answers a request that could not be read (when anyone is left to answer) and closes.
/// `head` is the request's, when the failure was in its body: the answer then takes the
/// envelope of its path.
fn unreadable(
    mut conn: Conn,
    reader: BufReader<ClientReader>,
    slot: &mut Slot,
    app: &App,
    head: Option<&Head>,
    e: &ReadError,
) {
    let Some(status) = e.status() else {
        return;
    };
    conn.keep_alive = false;
    let proto = head.map_or(Protocol::Chat, |h| error_protocol(h.path()));
    match e {
        ReadError::TooLarge(n) => {
            let msg =
                format!("request body is {n} bytes; the limit is {MAX_REQUEST_BYTES} (32 MiB)");
            // Recorded like any other refusal.
            let id = head.map_or_else(new_request_id, request_id);
            let trace = Trace::new(&id, "", false);
            completion::reject(&mut conn, app, proto, trace, Instant::now(), 413, &msg);
        }
        _ => {
            let msg = match e {
                ReadError::TimedOut => format!(
                    "the request did not arrive within {} ms (serve.requestTimeoutMs)",
                    app.request_timeout.as_millis()
                ),
                _ => e.to_string(),
            };
            conn.send(
                Reply::error(proto, status, &msg, "invalid_request_error"),
                false,
            );
        }
    }
    linger(conn, reader, slot);
}

/// After refusing a request: stop writing, read (and drop) what the client still sends for
/// a moment, then close. Closing with unread data would reset the connection and the client
/// might never see the answer. A draining connection is on standby: sheddable.
fn linger(conn: Conn, mut reader: BufReader<ClientReader>, slot: &mut Slot) {
    slot.stand_by();
    let _ = conn.stream.shutdown(Shutdown::Write);
    reader.get_mut().deadline = Some(Instant::now() + LINGER);
    let mut sink = [0u8; 16 * 1024];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
}
