//! A small HTTP/1.1 load generator for `scripts/bench-proxy.sh`.
//!
//! Keep-alive connections, one thread each, TCP_NODELAY, each request written in one
//! write. Prints one JSON line: requests, errors, seconds, req/s, and latency percentiles
//! in microseconds (for streams, also time to the first body byte).
//!
//! Usage: loadgen ADDR PATH BODY_JSON [--conns N] [--requests N | --seconds S] [--stream]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Opts {
    addr: String,
    path: String,
    body: String,
    conns: usize,
    requests: Option<usize>,
    seconds: Option<f64>,
    stream: bool,
}

fn parse() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        addr: args.first().cloned().expect("ADDR"),
        path: args.get(1).cloned().expect("PATH"),
        body: args.get(2).cloned().expect("BODY"),
        conns: 1,
        requests: None,
        seconds: None,
        stream: false,
    };
    let mut i = 3;
    while i < args.len() {
        match args[i].as_str() {
            "--conns" => {
                o.conns = args[i + 1].parse().unwrap();
                i += 1;
            }
            "--requests" => {
                o.requests = Some(args[i + 1].parse().unwrap());
                i += 1;
            }
            "--seconds" => {
                o.seconds = Some(args[i + 1].parse().unwrap());
                i += 1;
            }
            "--stream" => o.stream = true,
            other => panic!("unknown option {other}"),
        }
        i += 1;
    }
    o
}

/// Reads one response; returns (status, microseconds to the first body byte).
fn read_response(r: &mut BufReader<TcpStream>, start: Instant) -> std::io::Result<(u16, u64)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = None;
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if l.starts_with("transfer-encoding:") && l.contains("chunked") {
            chunked = true;
        }
    }
    let mut first_byte = None;
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            first_byte.get_or_insert_with(|| start.elapsed().as_micros() as u64);
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut buf = vec![0; size + 2];
            r.read_exact(&mut buf)?;
            if size == 0 {
                break;
            }
        }
    } else {
        let mut buf = vec![0; length.unwrap_or(0)];
        r.read_exact(&mut buf)?;
        first_byte = Some(start.elapsed().as_micros() as u64);
    }
    Ok((status, first_byte.unwrap_or(0)))
}

fn main() {
    let o = Arc::new(parse());
    let stop = Arc::new(AtomicBool::new(false));
    let per_conn = o.requests.map(|n| n.div_ceil(o.conns));
    let started = Instant::now();
    let handles: Vec<_> = (0..o.conns)
        .map(|_| {
            let (o, stop) = (o.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut ttfb = Vec::new();
                let mut errors = 0u64;
                let request = format!(
                    "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                    o.path,
                    o.addr,
                    o.body.len(),
                    o.body
                );
                let connect = || {
                    let s = TcpStream::connect(&o.addr).expect("connect");
                    s.set_nodelay(true).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                    s
                };
                let mut conn = connect();
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) && per_conn.is_none_or(|n| done < n) {
                    let t = Instant::now();
                    let ok = conn.write_all(request.as_bytes()).is_ok();
                    match ok.then(|| read_response(&mut reader, t)) {
                        Some(Ok((200, first))) => {
                            lat.push(t.elapsed().as_micros() as u64);
                            ttfb.push(first);
                        }
                        _ => {
                            errors += 1;
                            conn = connect();
                            reader = BufReader::new(conn.try_clone().unwrap());
                        }
                    }
                    done += 1;
                }
                (lat, ttfb, errors)
            })
        })
        .collect();
    if let Some(s) = o.seconds {
        std::thread::sleep(Duration::from_secs_f64(s));
        stop.store(true, Ordering::Relaxed);
    }
    let mut lat = Vec::new();
    let mut ttfb = Vec::new();
    let mut errors = 0;
    for h in handles {
        let (l, t, e) = h.join().unwrap();
        lat.extend(l);
        ttfb.extend(t);
        errors += e;
    }
    let secs = started.elapsed().as_secs_f64();
    lat.sort_unstable();
    ttfb.sort_unstable();
    let pct = |v: &[u64], p: f64| {
        if v.is_empty() {
            0
        } else {
            v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
        }
    };
    println!(
        "{{\"requests\":{},\"errors\":{errors},\"seconds\":{secs:.3},\"rps\":{:.0},\"p50Us\":{},\"p99Us\":{},\"ttfbP50Us\":{},\"ttfbP99Us\":{},\"stream\":{}}}",
        lat.len(),
        lat.len() as f64 / secs,
        pct(&lat, 50.0),
        pct(&lat, 99.0),
        pct(&ttfb, 50.0),
        pct(&ttfb, 99.0),
        o.stream
    );
}
