//! Who may use `fcm serve`. Without an access token it trusts whatever reaches it, so it
//! refuses requests a web page could have made: a `Host` that is not this server (DNS
//! rebinding) or an `Origin` other than the server's own (a page of another site, or of
//! another local port, POSTing to spend the user's keys; `Origin: null` from sandboxed frames
//! and files too). Coding tools send no `Origin`. With a token (a tunnel, another host) the
//! token is the check, on every path but `/health`.
//!
//! `fcm stop` may always stop the server: `serve.json` (the user's own, 0600 where files
//! have modes) holds a stop key made at start, which admits `POST /fcm/admin/stop` and
//! nothing else. Whoever can read that file could end the process anyway; the key lets
//! them end it gracefully where there is no SIGTERM (Windows) or no token in their shell.
//!
//! Pure: a request head in, a verdict out. `edge::client` asks before it reads a byte of the body.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::edge::http::Head;

/// The port a Host or Origin without one means (RFC 9110 §4.2.1).
const DEFAULT_HTTP_PORT: u16 = 80;

/// Why a request was refused before any work was done for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    ForeignHost(String),
    ForeignOrigin(String),
    MissingToken,
}

impl Denied {
    /// The HTTP status and OpenAI error type to answer with.
    pub(crate) fn status(&self) -> (u16, &'static str) {
        match self {
            Denied::ForeignHost(_) | Denied::ForeignOrigin(_) => (403, "permission_error"),
            Denied::MissingToken => (401, "authentication_error"),
        }
    }
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denied::ForeignHost(host) => write!(
                f,
                "fcm serve answers only requests addressed to itself (a loopback name and its port), not Host: {host}"
            ),
            Denied::ForeignOrigin(origin) => write!(
                f,
                "fcm serve does not answer requests from web pages other than its own (Origin: {origin}); set an access token to allow them"
            ),
            Denied::MissingToken => f.write_str(
                "fcm serve requires its access token: send it as `Authorization: Bearer <token>` or `x-api-key`",
            ),
        }
    }
}

impl std::error::Error for Denied {}

/// The header `fcm stop` sends the stop key in.
pub const STOP_KEY_HEADER: &str = "x-fcm-stop-key";

/// The path the stop key admits.
pub const STOP_PATH: &str = "/fcm/admin/stop";

/// Admits a request or says why not. `address` is where the server listens; `stop_key`
/// admits a stop request (see the module's doc).
pub(crate) fn admit(
    head: &Head,
    token: Option<&str>,
    stop_key: &str,
    address: SocketAddr,
) -> Result<(), Denied> {
    match token {
        None => addressed_to_this_server(head, address),
        Some(_) if head.path() == "/health" || is_stop(head, stop_key) => Ok(()),
        Some(token) if carries(head, token) => Ok(()),
        Some(_) => Err(Denied::MissingToken),
    }
}

/// A stop request with the stop key.
fn is_stop(head: &Head, stop_key: &str) -> bool {
    head.method() == "POST"
        && head.path() == STOP_PATH
        && head
            .header(STOP_KEY_HEADER)
            .is_some_and(|k| same_secret(k.trim(), stop_key))
}

fn addressed_to_this_server(head: &Head, address: SocketAddr) -> Result<(), Denied> {
    // `http` has made sure an HTTP/1.1 request names exactly one Host; HTTP/1.0 may omit it.
    if let Some(host) = head
        .header("host")
        .filter(|h| !names_this_server(h, address))
    {
        return Err(Denied::ForeignHost(host.to_string()));
    }
    if let Some(origin) = head.header("origin").filter(|o| !is_own_origin(o, address)) {
        return Err(Denied::ForeignOrigin(origin.to_string()));
    }
    Ok(())
}

/// Whether a Host value (`name[:port]`) names this server: a loopback address, `localhost`
/// or the bound address, with the server's port.
fn names_this_server(authority: &str, address: SocketAddr) -> bool {
    split_authority(authority).is_some_and(|(ip, port)| {
        port == address.port() && (ip.is_loopback() || ip == address.ip())
    })
}

/// Whether an Origin is the server's own: `http://` and an authority [`names_this_server`]
/// accepts, spelled as a browser spells it (no path, no default port).
fn is_own_origin(origin: &str, address: SocketAddr) -> bool {
    origin
        .strip_prefix("http://")
        .filter(|authority| !authority.ends_with(&format!(":{DEFAULT_HTTP_PORT}")))
        .is_some_and(|authority| names_this_server(authority, address))
}

/// `localhost`, `127.0.0.1` or `[::1]`, with an optional `:port`, as an address and a port.
/// Anything else (other names, an empty or signed port, an unbracketed IPv6 address) is
/// `None`.
fn split_authority(authority: &str) -> Option<(IpAddr, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        (inside, after)
    } else {
        authority.split_at(authority.find(':').unwrap_or(authority.len()))
    };
    let port = match port.strip_prefix(':') {
        None if port.is_empty() => DEFAULT_HTTP_PORT,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok()?
        }
        _ => return None,
    };
    let ip = if authority.starts_with('[') {
        IpAddr::V6(host.parse::<Ipv6Addr>().ok()?)
    } else if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        IpAddr::V4(host.parse::<Ipv4Addr>().ok()?)
    };
    Some((ip, port))
}

/// Whether the request carries the access token.
fn carries(head: &Head, token: &str) -> bool {
    let bearer = head.header("authorization").and_then(|v| {
        v.strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
    });
    let given = bearer.or_else(|| head.header("x-api-key")).map(str::trim);
    given.is_some_and(|g| same_secret(g, token))
}

/// Compares without an early exit, so timing does not reveal a prefix. An empty secret
/// matches nothing.
fn same_secret(given: &str, secret: &str) -> bool {
    !secret.is_empty()
        && given.len() == secret.len()
        && given
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// `prefix` and `bytes` random bytes in hex, from the system's random source.
pub fn random_token(prefix: &str, bytes: usize) -> Result<String, getrandom::Error> {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf)?;
    let mut token = prefix.to_string();
    crate::hex::push_hex(&mut token, &buf);
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GET head with these header lines (a Host is added when none is given).
    fn head(path: &str, lines: &[&str]) -> Head {
        request("GET", path, lines)
    }

    fn request(method: &str, path: &str, lines: &[&str]) -> Head {
        let mut text = format!("{method} {path} HTTP/1.1\r\n");
        if !lines
            .iter()
            .any(|l| l.to_ascii_lowercase().starts_with("host:"))
        {
            text.push_str("Host: 127.0.0.1:19280\r\n");
        }
        for l in lines {
            text.push_str(l);
            text.push_str("\r\n");
        }
        text.push_str("\r\n");
        crate::edge::http::read_head(&mut text.as_bytes()).unwrap()
    }

    const SERVER: &str = "127.0.0.1:19280";
    const KEY: &str = "stop-0123";

    fn verdict(lines: &[&str], token: Option<&str>, address: &str) -> Result<(), Denied> {
        admit(
            &head("/v1/models", lines),
            token,
            KEY,
            address.parse().unwrap(),
        )
    }

    #[test]
    fn hosts_without_a_token() {
        let cases: &[(&str, &str, bool)] = &[
            ("127.0.0.1:19280", SERVER, true),
            ("localhost:19280", SERVER, true),
            ("LocalHost:19280", SERVER, true),
            ("[::1]:19280", SERVER, true),
            ("127.0.0.2:19280", SERVER, true),
            ("127.0.0.1:19281", SERVER, false),
            ("127.0.0.1:3000", SERVER, false),
            ("127.0.0.1", SERVER, false),
            ("127.0.0.1", "127.0.0.1:80", true),
            ("localhost", "127.0.0.1:80", true),
            ("localhost:80", "127.0.0.1:80", true),
            ("127.0.0.1:", SERVER, false),
            ("127.0.0.1:+19280", SERVER, false),
            ("127.0.0.1:019280", SERVER, true),
            ("127.0.0.1:99999", SERVER, false),
            ("::1:19280", SERVER, false),
            ("[127.0.0.1]:19280", SERVER, false),
            ("localhost.:19280", SERVER, false),
            ("attacker.example:19280", SERVER, false),
            ("attacker.example", SERVER, false),
            ("127.0.0.1.nip.io:19280", SERVER, false),
            ("10.0.0.5:19280", SERVER, false),
            ("10.0.0.5:19280", "10.0.0.5:19280", true),
            ("", SERVER, false),
        ];
        for (host, server, ok) in cases {
            let host_line = format!("Host: {host}");
            let got = verdict(&[&host_line], None, server);
            assert_eq!(got.is_ok(), *ok, "Host {host:?} on {server}: {got:?}");
            if !ok {
                assert_eq!(got, Err(Denied::ForeignHost(host.to_string())));
            }
        }
    }

    #[test]
    fn origins_without_a_token() {
        let cases: &[(&str, &str, bool)] = &[
            ("http://127.0.0.1:19280", SERVER, true),
            ("http://localhost:19280", SERVER, true),
            ("http://[::1]:19280", SERVER, true),
            ("http://localhost:3000", SERVER, false),
            ("http://[::1]:5173", SERVER, false),
            ("http://127.0.0.1", SERVER, false),
            ("null", SERVER, false),
            ("https://127.0.0.1:19280", SERVER, false),
            ("http://127.0.0.1:19280/", SERVER, false),
            ("http://evil.example", SERVER, false),
            ("https://evil.example:19280", SERVER, false),
            ("http://localhost", "127.0.0.1:80", true),
            ("http://localhost:80", "127.0.0.1:80", false),
            ("", SERVER, false),
        ];
        for (origin, server, ok) in cases {
            let host_line = format!("Host: {server}");
            let origin_line = format!("Origin: {origin}");
            let got = verdict(&[&host_line, &origin_line], None, server);
            assert_eq!(got.is_ok(), *ok, "Origin {origin:?} on {server}: {got:?}");
            if !ok {
                assert_eq!(got, Err(Denied::ForeignOrigin(origin.to_string())));
            }
        }
        assert_eq!(
            verdict(&[], None, SERVER),
            Ok(()),
            "no Origin: a coding tool"
        );
    }

    #[test]
    fn a_token_is_the_check_when_set() {
        let cases: &[(&str, &[&str], Result<(), Denied>)] = &[
            ("/v1/models", &["Authorization: Bearer tok"], Ok(())),
            ("/v1/models", &["Authorization: bearer tok"], Ok(())),
            ("/v1/models", &["x-api-key: tok"], Ok(())),
            ("/v1/models", &[], Err(Denied::MissingToken)),
            (
                "/v1/models",
                &["Authorization: Bearer to"],
                Err(Denied::MissingToken),
            ),
            (
                "/v1/models",
                &["Authorization: Basic tok"],
                Err(Denied::MissingToken),
            ),
            (
                "/v1/models",
                &["x-api-key: tokk"],
                Err(Denied::MissingToken),
            ),
            ("/health", &[], Ok(())),
            ("/health?x=1", &[], Ok(())),
            (
                "/v1/models",
                &["Host: tunnel.example", "Origin: null", "x-api-key: tok"],
                Ok(()),
            ),
        ];
        for (path, lines, want) in cases {
            let got = admit(
                &head(path, lines),
                Some("tok"),
                KEY,
                "0.0.0.0:19280".parse().unwrap(),
            );
            assert_eq!(&got, want, "{path} {lines:?}");
        }
    }

    #[test]
    fn the_stop_key_admits_a_stop_and_nothing_else() {
        let key = "x-fcm-stop-key: stop-0123";
        type Case<'a> = (&'a str, &'a str, &'a [&'a str], Option<&'a str>, bool);
        let cases: &[Case] = &[
            ("POST", "/fcm/admin/stop", &[key], Some("tok"), true),
            ("POST", "/fcm/admin/stop", &[key], None, true),
            ("POST", "/fcm/admin/stop", &[], Some("tok"), false),
            (
                "POST",
                "/fcm/admin/stop",
                &["x-fcm-stop-key: stop-0124"],
                Some("tok"),
                false,
            ),
            (
                "POST",
                "/fcm/admin/stop",
                &["x-fcm-stop-key: "],
                Some("tok"),
                false,
            ),
            ("GET", "/fcm/admin/stop", &[key], Some("tok"), false),
            (
                "POST",
                "/fcm/admin/breakers/reset",
                &[key],
                Some("tok"),
                false,
            ),
            ("POST", "/v1/chat/completions", &[key], Some("tok"), false),
            // Without a token the Host check still applies to it.
            (
                "POST",
                "/fcm/admin/stop",
                &[key, "Host: evil.example:19280"],
                None,
                false,
            ),
        ];
        for (method, path, lines, token, ok) in cases {
            let got = admit(
                &request(method, path, lines),
                *token,
                KEY,
                SERVER.parse().unwrap(),
            );
            assert_eq!(
                got.is_ok(),
                *ok,
                "{method} {path} {lines:?} {token:?}: {got:?}"
            );
        }
        assert!(
            admit(
                &request("POST", "/fcm/admin/stop", &["x-fcm-stop-key: "]),
                Some("tok"),
                "",
                SERVER.parse().unwrap()
            )
            .is_err(),
            "an empty key matches nothing"
        );
        let (a, b) = (
            random_token("s-", 16).unwrap(),
            random_token("s-", 16).unwrap(),
        );
        assert_eq!(a.len(), 2 + 32);
        assert_ne!(a, b);
    }

    #[test]
    fn refusals_name_their_status() {
        assert_eq!(Denied::MissingToken.status().0, 401);
        assert_eq!(Denied::ForeignOrigin("null".into()).status().0, 403);
        assert!(Denied::ForeignHost("x".into())
            .to_string()
            .contains("Host: x"));
    }
}
