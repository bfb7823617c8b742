//! The listening socket's loop: accept connections, give each a slot and a thread of its own
//! (or a fast 503 when every slot has a request in progress), and on SIGINT/SIGTERM stop
//! accepting and wait for running requests to finish.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::edge::app::App;
use crate::edge::client;
use crate::edge::connections::Slot;
use crate::edge::reply::{Conn, Reply};
use crate::protocol::Protocol;
use crate::state::trace::new_request_id;

/// Open connections (idle keep-alive ones included) per allowed request in flight.
const CONNECTIONS_PER_REQUEST: usize = 4;
/// How long shutdown waits for running streams.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// A write to a client that takes longer than this means the client is gone.
const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Each connection's thread: the request path is shallow, and hundreds of idle keep-alive
/// connections must not cost the default 2 MiB each.
const CONNECTION_STACK: usize = 256 * 1024;

/// Serves on `listener` until SIGINT/SIGTERM; returns after running requests finished (or
/// [`DRAIN_TIMEOUT`]).
pub fn run(listener: TcpListener, app: Arc<App>) -> std::io::Result<()> {
    crate::edge::signals::install();
    let address = listener.local_addr()?;
    let a = app.clone();
    let acceptor = std::thread::Builder::new()
        .name("fcm-accept".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if crate::edge::signals::stop_requested() {
                    return;
                }
                let stream = match conn {
                    Ok(s) => s,
                    Err(_) => {
                        // Out of file descriptors or similar: back off instead of spinning.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                accept(stream, &a);
            }
        })?;
    while !crate::edge::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Wake the acceptor so it sees the flag and stops taking connections.
    let _ = TcpStream::connect_timeout(&wake_address(address), Duration::from_millis(500));
    let _ = acceptor.join();
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while app.in_flight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::edge::request_log::flush();
    Ok(())
}

fn wake_address(bound: SocketAddr) -> SocketAddr {
    if bound.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], bound.port()))
    } else {
        bound
    }
}

/// Gives a new connection its thread, or a fast 503 when there are too many.
fn accept(stream: TcpStream, app: &Arc<App>) {
    let _ = stream.set_nodelay(true);
    // A client that stops reading must not hold its slot (and the upstream) forever.
    let _ = stream.set_write_timeout(Some(CLIENT_WRITE_TIMEOUT));
    let Ok(handle) = stream.try_clone() else {
        return;
    };
    let limit = app.max_in_flight * CONNECTIONS_PER_REQUEST;
    let Some(mut slot) = Slot::take(&app.connections, limit, handle) else {
        // Nothing of the request is read yet, so no path says which envelope it wants.
        let mut conn = Conn::new(stream, false);
        conn.send(Reply::overloaded(Protocol::Chat, &new_request_id()), false);
        return;
    };
    let a = app.clone();
    // If the thread cannot start, the slot is dropped with the closure: released.
    let _ = std::thread::Builder::new()
        .name("fcm-conn".into())
        .stack_size(CONNECTION_STACK)
        .spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                client::serve(stream, &mut slot, &a)
            }));
        });
}
