//! `fcm serve`: load state, bind, serve until a signal (or `fcm stop`), flush, clean up; or,
//! with `--detach`, the same in the background.

pub(crate) mod detach;

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::exit::ExitCode;
use crate::commands::{process_id_token, usage, Setup};
use crate::edge::{self, App};
use crate::providers::upstream::Upstream;
use crate::routing::{Parts, Router};
use crate::state::affinity::Affinity;
use crate::state::breaker::{BreakerBook, Breakers};
use crate::state::files;
use crate::state::ledger::Ledger;
use crate::state::persist::{self, Flusher, StatePaths, WriteCounts};
use crate::state::serve_info::{self, ServeInfo};
use crate::state::trace::{History, HistoryFile};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "serve")]
/// Run the routing proxy (OpenAI-compatible) on 127.0.0.1:19280.
pub(crate) struct ServeArgs {
    /// address to listen on (default 127.0.0.1; anything else requires a token)
    #[argh(option, default = "String::from(\"127.0.0.1\")")]
    pub(crate) host: String,
    /// port (default: config.json port, else 19280)
    #[argh(option)]
    pub(crate) port: Option<u16>,
    /// access token required on every request (also FCM_TOKEN or serve.token in config.json)
    #[argh(option)]
    pub(crate) token: Option<String>,
    /// requests handled at once before answering 503 (default 256)
    #[argh(option, default = "256")]
    pub(crate) max_in_flight: usize,
    /// no per-request log lines on stderr
    #[argh(switch)]
    pub(crate) quiet: bool,
    /// run in the background (log in $FCM_HOME/serve.log); `fcm stop` stops it
    #[argh(switch)]
    pub(crate) detach: bool,
    /// the log a detached server writes, rotated at 10 MB (set by --detach)
    #[argh(option, hidden_help)]
    pub(crate) log_file: Option<std::path::PathBuf>,
}

/// `fcm serve --detach`: the same server in the background; prints where it listens.
fn detach(args: &ServeArgs) -> Result<ExitCode> {
    let mut forwarded = vec![
        "--host".to_string(),
        args.host.clone(),
        "--max-in-flight".to_string(),
        args.max_in_flight.to_string(),
    ];
    if let Some(port) = args.port {
        forwarded.extend(["--port".to_string(), port.to_string()]);
    }
    if args.quiet {
        forwarded.push("--quiet".to_string());
    }
    // The token goes in the environment: a command line is visible to every user.
    let env: Vec<(&str, String)> = args
        .token
        .iter()
        .map(|t| ("FCM_TOKEN", t.clone()))
        .collect();
    let log = files::state_file("serve.log")?;
    let info = crate::commands::serve::detach::start(&forwarded, &env, &log)?;
    println!(
        "fcm serve: running in the background at http://{address}/v1 (pid {}); dashboard: http://{address}/; log: {}; `fcm stop` stops it",
        info.pid,
        log.display(),
        address = info.address,
    );
    Ok(ExitCode::Ok)
}

/// Binds with TCP_NODELAY on the listening socket (accepted sockets inherit it on Linux;
/// `serve` sets it on each one too), so small stream chunks are never held back by Nagle's
/// algorithm, and with a listen backlog of [`LISTEN_BACKLOG`]: std's 128 drops connections
/// when an agent opens a few hundred at once, and a dropped SYN costs the client a
/// retransmit of a second or more.
fn bind(addr: SocketAddr) -> Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let in_use = |e: std::io::Error| {
        match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "port {} on {} is already in use (another `fcm serve`?); stop it or choose another with --port",
            addr.port(),
            addr.ip()
        ),
        _ => anyhow::anyhow!("cannot listen on {addr}: {e}"),
    }
    };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(in_use)?;
    // As std does on Unix: a restarted server may bind while old connections linger in
    // TIME_WAIT. (On Windows the option would let another program take the port.)
    #[cfg(unix)]
    socket.set_reuse_address(true).map_err(in_use)?;
    socket.bind(&addr.into()).map_err(in_use)?;
    socket.listen(LISTEN_BACKLOG).map_err(in_use)?;
    let _ = socket.set_tcp_nodelay(true);
    Ok(socket.into())
}

/// Connections waiting to be accepted (the system caps it: `net.core.somaxconn` on Linux,
/// `kern.ipc.somaxconn` on macOS).
const LISTEN_BACKLOG: i32 = 1024;

/// glibc gives each busy thread its own malloc arena (up to 8 per core), each keeping freed
/// memory resident; with hundreds of stream threads that is most of the server's RSS.
/// Two arenas keep it small at no measurable cost to throughput (scripts/bench-proxy.sh).
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; called before the server's threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// How often a detached server's log is checked for its size.
const LOG_RECHECK: Duration = Duration::from_secs(10);

/// How often `bench.json` is checked for a newer version (a `fcm bench` run while serving).
const BENCH_RECHECK: Duration = Duration::from_secs(5);

/// Runs `task` every `interval` on a thread of its own until the server stops.
fn every(name: &str, interval: Duration, mut task: impl FnMut() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut last = Instant::now();
            while !crate::edge::signals::stop_requested() {
                std::thread::sleep(Duration::from_millis(200).min(interval));
                if last.elapsed() >= interval {
                    last = Instant::now();
                    task();
                }
            }
        });
}

/// How often silent models are looked at for a probe that is due.
const SILENCE_RECHECK: Duration = Duration::from_secs(5);

/// Which models a prober looks at: silent ones whose probe is due (always on: a silent
/// model waits behind every responsive one until a probe hears it), or, every
/// `router.probe.intervalSec` (opt-in), those whose cooldown has ended.
#[derive(Clone, Copy)]
enum Probed {
    Silent,
    Recovered,
}

/// Probes `which` models every `interval`, saying on stderr what each probe found.
fn start_prober(app: Arc<App>, which: Probed, interval: Duration) {
    let name = match which {
        Probed::Silent => "fcm-silence",
        Probed::Recovered => "fcm-probe",
    };
    every(name, interval, move || {
        let timeout = Duration::from_millis(app.router.failover.first_token_timeout_ms);
        let found = match which {
            Probed::Silent => app.router.probe_silent(timeout),
            Probed::Recovered => app.router.probe_recovered(timeout),
        };
        for (model, ok) in found {
            if app.quiet {
                continue;
            }
            let what = match (which, ok) {
                (Probed::Silent, true) => "answered, back in rotation",
                (Probed::Silent, false) => "still silent",
                (Probed::Recovered, true) => "answered, breaker closed",
                (Probed::Recovered, false) => "failed, breaker open again",
            };
            eprintln!("fcm serve: probe {model}: {what}");
        }
    });
}

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    if args.detach {
        return detach(&args);
    }
    limit_malloc_arenas();
    if args.max_in_flight == 0 || args.max_in_flight > 4096 {
        return usage(format!(
            "--max-in-flight must be between 1 and 4096 (got {})",
            args.max_in_flight
        ));
    }
    let ip: IpAddr = match args.host.parse() {
        Ok(ip) => ip,
        Err(_) if args.host == "localhost" => IpAddr::from([127, 0, 0, 1]),
        Err(_) => {
            return usage(format!(
                "--host {:?} is not an IP address (e.g. 127.0.0.1 or 0.0.0.0)",
                args.host
            ))
        }
    };
    let setup = Setup::load()?;
    // Held until the server ends: nothing of another server's is touched without it.
    let Some(_home) = serve_info::lock_home()? else {
        let home = files::state_file("serve.lock")?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        eprintln!("fcm serve: {}", serve_info::home_taken_message(&home));
        return Ok(ExitCode::Failure);
    };
    let token = setup.config.serve.access_token(args.token.as_deref());
    if !ip.is_loopback() && token.is_none() {
        return usage(format!(
            "--host {ip} accepts connections from other machines: set an access token with --token, FCM_TOKEN or serve.token in config.json"
        ));
    }
    let port = args.port.unwrap_or(setup.config.port);
    let paths = StatePaths {
        breakers: files::state_file("breakers.json")?,
        history: files::state_file("history.json")?,
        usage: files::state_file("usage.json")?,
        affinity: files::state_file("affinity.json")?,
        carry: files::state_file("carry.json")?,
    };
    let now = crate::time::now_ms();
    let book: BreakerBook = files::load_json(&paths.breakers)?;
    let history: HistoryFile = files::load_json(&paths.history)?;
    let breakers = Breakers::new(book, setup.config.router.breaker.clone(), now);
    let ledger = Ledger::load(&paths.usage, now, setup.config.router.keys.sticky)?;
    let kept = &setup.config.router.affinity;
    let affinity = match kept.enabled {
        true => Some(Affinity::new(
            files::load_json(&paths.affinity)?,
            kept.idle_minutes * 60_000,
            now,
        )),
        false => None,
    };
    let router = Router::new(Parts {
        catalog: &setup.catalog,
        keys: &setup.keys(),
        config: &setup.config.router,
        breakers,
        ledger,
        history: History::new(history),
        affinity,
        carry: files::load_json(&paths.carry)?,
        bench: Some(files::state_file("bench.json")?),
        session_id: &process_id_token(),
        secrets: setup.secrets(args.token.as_deref()),
        exchange: Box::new(Upstream::new()),
    });
    let listener = bind(SocketAddr::new(ip, port))?;
    let address = listener.local_addr()?;
    let routable = router.routable().count();
    for (named_in, model) in router.stale_set_members() {
        match named_in {
            crate::routing::NamedIn::Pool(pool) => eprintln!("fcm serve: warning: router.capabilityPools.{pool} names {model:?}, which is not in the catalog (ignored; `fcm models` lists them)"),
            crate::routing::NamedIn::Set(set) => eprintln!("fcm serve: warning: set {set:?} names {model:?}, which is not in the catalog (stale; `fcm sets` lists the sets)"),
        }
    }
    let stop_key = crate::edge::access::random_token("stop-", 16)
        .context("the system's random source failed (for the key `fcm stop` uses)")?;
    let app = Arc::new(App {
        router,
        catalog: setup.catalog.clone(),
        address,
        started: Instant::now(),
        in_flight: AtomicUsize::new(0),
        connections: Default::default(),
        max_in_flight: args.max_in_flight,
        request_timeout: Duration::from_millis(setup.config.serve.request_timeout_ms),
        idle_timeout: Duration::from_millis(setup.config.serve.idle_timeout_ms),
        quiet: args.quiet,
        token: token.clone(),
        stop_key: stop_key.clone(),
        writes: WriteCounts::default(),
    });
    let info_path = serve_info::serve_info_path()?;
    serve_info::write_serve_info(
        &info_path,
        &ServeInfo {
            pid: std::process::id(),
            address: address.to_string(),
            started_at: crate::time::rfc3339(now),
            version: env!("CARGO_PKG_VERSION").to_string(),
            token_required: token.is_some(),
            stop_key: Some(stop_key),
        },
    )?;
    eprintln!("fcm serve: listening on http://{address}/v1 ({routable} routable models; model \"fcm\" routes automatically, \"fcm:provider/modelId\" pins one)");
    eprintln!("fcm serve: dashboard: http://{address}/ (in a browser; `fcm top` in a terminal)");
    if routable == 0 {
        eprintln!("fcm serve: warning: no provider key is set, so every request will fail; `fcm models` lists the variables");
    }
    let flusher = Flusher::start(app.clone(), paths.clone());
    // bench.json is reloaded here, off the request path, when `fcm bench` rewrites it.
    let watched = app.clone();
    every("fcm-bench-watch", BENCH_RECHECK, move || {
        watched.router.refresh_bench()
    });
    if let Some(secs) = setup.config.router.probe.interval_sec {
        start_prober(app.clone(), Probed::Recovered, Duration::from_secs(secs));
    }
    start_prober(app.clone(), Probed::Silent, SILENCE_RECHECK);
    if let Some(log) = args.log_file.clone() {
        every("fcm-log", LOG_RECHECK, move || {
            crate::commands::serve::detach::rotate(&log)
        });
    }
    let result = edge::run(listener, app.clone());
    flusher.stop();
    persist::flush(&*app, &paths);
    let _ = std::fs::remove_file(&info_path);
    result.context("fcm serve stopped")?;
    eprintln!(
        "fcm serve: stopped; state saved to {}",
        paths
            .breakers
            .parent()
            .map_or(String::new(), |p| p.display().to_string())
    );
    Ok(ExitCode::Ok)
}
