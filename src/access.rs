//! Who may use `fcm serve`. Without an access token it trusts whatever reaches it, so it
//! refuses requests a web page could have made: a `Host` that is not this machine (DNS
//! rebinding) or an `Origin` of another site (cross-site POSTs spending the user's keys).
//! Coding tools send neither. With a token (a tunnel, another host) the token is the check,
//! on every path but `/health`. Pure: a request head in, a verdict out.

use std::net::SocketAddr;

use crate::http::Request;

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
                "fcm serve answers only requests addressed to this machine, not Host: {host}"
            ),
            Denied::ForeignOrigin(origin) => write!(
                f,
                "fcm serve does not answer requests from web pages of other sites (Origin: {origin})"
            ),
            Denied::MissingToken => f.write_str(
                "fcm serve requires its access token: send it as `Authorization: Bearer <token>` or `x-api-key`",
            ),
        }
    }
}

impl std::error::Error for Denied {}

/// Admits a request or says why not. `address` is where the server listens.
pub(crate) fn admit(req: &Request, token: Option<&str>, address: SocketAddr) -> Result<(), Denied> {
    match token {
        None => local_origin(req, address),
        Some(_) if req.path() == "/health" => Ok(()),
        Some(token) if carries(req, token) => Ok(()),
        Some(_) => Err(Denied::MissingToken),
    }
}

fn local_origin(req: &Request, address: SocketAddr) -> Result<(), Denied> {
    let local = |host: &str| {
        let name = if let Some(rest) = host.strip_prefix('[') {
            rest.split(']').next().unwrap_or("")
        } else {
            host.rsplit_once(':').map_or(host, |(h, _)| h)
        };
        matches!(name, "localhost" | "127.0.0.1" | "::1") || name == address.ip().to_string()
    };
    if let Some(host) = req.header("host").filter(|h| !local(h)) {
        return Err(Denied::ForeignHost(host.to_string()));
    }
    if let Some(origin) = req.header("origin").filter(|o| *o != "null") {
        let host = origin
            .split_once("://")
            .map_or(origin, |(_, h)| h)
            .split('/')
            .next()
            .unwrap_or("");
        if !local(host) {
            return Err(Denied::ForeignOrigin(origin.to_string()));
        }
    }
    Ok(())
}

/// Whether the request carries the access token.
fn carries(req: &Request, token: &str) -> bool {
    let bearer = req.header("authorization").and_then(|v| {
        v.strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
    });
    let given = bearer.or_else(|| req.header("x-api-key")).map(str::trim);
    // Compare without an early exit so timing does not reveal a prefix.
    given.is_some_and(|g| {
        g.len() == token.len()
            && g.bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}
