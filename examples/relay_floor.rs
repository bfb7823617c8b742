//! The floor of fcm's design, for `scripts/bench-floor.sh`: a proxy built the way `fcm serve`
//! is (one blocking thread per client connection, a keep-alive connection to the provider,
//! HTTP framed with httparse) that does nothing else. It reads a request, writes it upstream
//! unchanged, reads the answer and writes it back: no JSON, no routing, no gate, no records.
//! What it costs per request under load is what the thread-per-connection design costs
//! before fcm does any of its work; the distance from it to `fcm serve` is fcm's own.
//!
//! Only what the benchmark sends is handled: requests and answers framed by
//! `content-length` (no chunked bodies, no streams).
//!
//! Usage: relay_floor LISTEN_ADDR UPSTREAM_ADDR   (prints `ready` once it listens)

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

/// Reads one HTTP message (head and `content-length` body) into `buf`, keeping bytes of
/// the next one that arrived with it in `buf[len..filled]`. Returns the message's length,
/// or `None` when the peer closed between messages.
fn read_message(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    filled: &mut usize,
    request: bool,
) -> io::Result<Option<usize>> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let parsed = if request {
            let mut req = httparse::Request::new(&mut headers);
            req.parse(&buf[..*filled])
        } else {
            let mut res = httparse::Response::new(&mut headers);
            res.parse(&buf[..*filled])
        }
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if let httparse::Status::Complete(head) = parsed {
            let body = headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .unwrap_or(0);
            let total = head + body;
            if buf.len() < total {
                buf.resize(total, 0);
            }
            while *filled < total {
                let n = stream.read(&mut buf[*filled..])?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *filled += n;
            }
            return Ok(Some(total));
        }
        if *filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = stream.read(&mut buf[*filled..])?;
        if n == 0 {
            return if *filled == 0 {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        *filled += n;
    }
}

/// Drops the first `len` bytes of `buf[..filled]` (the message just relayed).
fn consume(buf: &mut [u8], filled: &mut usize, len: usize) {
    buf.copy_within(len..*filled, 0);
    *filled -= len;
}

fn relay(mut client: TcpStream, upstream_addr: &str) -> io::Result<()> {
    client.set_nodelay(true)?;
    let mut upstream = TcpStream::connect(upstream_addr)?;
    upstream.set_nodelay(true)?;
    let (mut req, mut req_filled) = (vec![0u8; 16 * 1024], 0);
    let (mut res, mut res_filled) = (vec![0u8; 16 * 1024], 0);
    while let Some(len) = read_message(&mut client, &mut req, &mut req_filled, true)? {
        upstream.write_all(&req[..len])?;
        consume(&mut req, &mut req_filled, len);
        let Some(len) = read_message(&mut upstream, &mut res, &mut res_filled, false)? else {
            return Err(io::ErrorKind::UnexpectedEof.into());
        };
        client.write_all(&res[..len])?;
        consume(&mut res, &mut res_filled, len);
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [listen, upstream] = args.as_slice() else {
        eprintln!("usage: relay_floor LISTEN_ADDR UPSTREAM_ADDR");
        std::process::exit(2);
    };
    let listener = TcpListener::bind(listen).unwrap_or_else(|e| {
        eprintln!("relay_floor: cannot listen on {listen}: {e}");
        std::process::exit(1);
    });
    println!("ready");
    for client in listener.incoming().flatten() {
        let upstream = upstream.clone();
        let _ = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                if let Err(e) = relay(client, &upstream) {
                    eprintln!("relay_floor: {e}");
                }
            });
    }
}
