//! Name lookups for provider URLs, cached.
//!
//! ureq's default resolver starts a thread for every lookup that has a timeout (every fcm
//! attempt has one), and it looks the host up before it checks its pool of idle
//! connections, so a proxied request paid for a whole thread's start and teardown: about
//! half of `fcm serve`'s CPU per request, in a perf profile under 64 connections. Here an
//! IP address needs no lookup at all, and a name is looked up once per [`TTL`]; only a
//! lookup that is not cached runs on a thread, so a hung DNS server still times out. (fcm's
//! own client now looks a name up only when it opens a connection, not for every request.)

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long a looked-up address is reused.
const TTL: Duration = Duration::from_secs(60);

/// Addresses per `host:port`, with when they were looked up.
type Cache = HashMap<String, (Instant, Vec<SocketAddr>)>;

/// The cache the upstream client (and a CONNECT proxy's connector) looks hosts up in when
/// it opens a connection. Clones share one cache (a race's clients of
/// their own look names up once between them).
#[derive(Debug, Default, Clone)]
pub(crate) struct CachedResolver {
    cache: Arc<Mutex<Cache>>,
}

impl Resolver for CachedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(ureq::Error::BadUri(format!("{uri} has no scheme or host")));
        };
        let port = authority.port_u16().unwrap_or(match scheme {
            "https" => 443,
            _ => 80,
        });
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let addrs = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => self.lookup(&format!("{host}:{port}"), timeout)?,
        };
        let mut out = self.empty();
        for addr in config.ip_family().keep_wanted(addrs.into_iter()).take(16) {
            out.push(addr);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

impl CachedResolver {
    fn lookup(
        &self,
        host_port: &str,
        timeout: NextTimeout,
    ) -> Result<Vec<SocketAddr>, ureq::Error> {
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(host_port)
            .filter(|(at, _)| at.elapsed() < TTL)
            .map(|(_, addrs)| addrs.clone());
        if let Some(addrs) = cached {
            return Ok(addrs);
        }
        let name = host_port.to_string();
        let addrs: Vec<SocketAddr> = if timeout.after.is_not_happening() {
            name.to_socket_addrs()?.collect()
        } else {
            let (tx, rx) = mpsc::sync_channel(1);
            std::thread::spawn(move || {
                let _ = tx.send(name.to_socket_addrs().map(Iterator::collect::<Vec<_>>));
            });
            match rx.recv_timeout(*timeout.after) {
                Ok(found) => found?,
                Err(_) => return Err(ureq::Error::Timeout(timeout.reason)),
            }
        };
        if !addrs.is_empty() {
            self.cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(host_port.to_string(), (Instant::now(), addrs.clone()));
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(url: &str) -> Vec<SocketAddr> {
        let r = CachedResolver::default();
        let uri: Uri = url.parse().unwrap();
        let config = ureq::config::Config::default();
        r.resolve(&uri, &config, NextTimeout::default())
            .unwrap()
            .iter()
            .copied()
            .collect()
    }

    #[test]
    fn addresses_need_no_lookup() {
        assert_eq!(
            resolve("http://127.0.0.1:8080/v1/chat/completions"),
            ["127.0.0.1:8080".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            resolve("http://[::1]:9/x"),
            ["[::1]:9".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(resolve("https://10.1.2.3/x")[0].port(), 443);
    }

    #[test]
    fn names_are_looked_up_and_cached() {
        let r = CachedResolver::default();
        let uri: Uri = "http://localhost:4000/v1".parse().unwrap();
        let config = ureq::config::Config::default();
        let first = r.resolve(&uri, &config, NextTimeout::default()).unwrap();
        assert!(first
            .iter()
            .all(|a| a.port() == 4000 && a.ip().is_loopback()));
        assert!(r.cache.lock().unwrap().contains_key("localhost:4000"));
    }
}
