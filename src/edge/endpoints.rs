//! The endpoint table: which method and path go where (a completion in one of the three
//! protocols, or one of fcm's own answers), and which envelope an error on a path takes.
//! A client learns of a mistake in its own protocol's words whatever went wrong, so the
//! envelope follows the path as soon as a request's head is read, before its body is.

use std::sync::Arc;

use crate::edge::app::App;
use crate::edge::completion;
use crate::edge::http::Request;
use crate::edge::live;
use crate::edge::local;
use crate::edge::metrics;
use crate::edge::reply::{Conn, Reply};
use crate::protocol::Protocol;

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// A completion, in the protocol of its path.
    Complete(Protocol),
    CountTokens,
    Dashboard,
    Health,
    Models,
    Breakers,
    ResetBreakers,
    Stop,
    Usage,
    History,
    /// The snapshot `fcm top` polls.
    Live,
    /// The Prometheus text format.
    Metrics,
    /// A completion or listing path, with a method it does not take (405).
    NotAllowed,
    NotFound,
}

impl Endpoint {
    pub(super) fn of(method: &str, path: &str) -> Endpoint {
        match (method, path) {
            ("POST", "/v1/chat/completions") => Endpoint::Complete(Protocol::Chat),
            ("POST", "/v1/messages") => Endpoint::Complete(Protocol::Anthropic),
            ("POST", "/v1/responses") => Endpoint::Complete(Protocol::Responses),
            ("POST", "/v1/messages/count_tokens") => Endpoint::CountTokens,
            ("GET" | "HEAD", "/") => Endpoint::Dashboard,
            ("GET" | "HEAD", "/health") => Endpoint::Health,
            ("GET" | "HEAD", "/v1/models") => Endpoint::Models,
            ("GET", "/fcm/admin/breakers") => Endpoint::Breakers,
            ("POST", "/fcm/admin/breakers/reset") => Endpoint::ResetBreakers,
            ("POST", crate::edge::access::STOP_PATH) => Endpoint::Stop,
            ("GET", "/fcm/admin/usage") => Endpoint::Usage,
            ("GET", "/fcm/admin/history") => Endpoint::History,
            ("GET", "/fcm/admin/live") => Endpoint::Live,
            ("GET" | "HEAD", "/metrics") => Endpoint::Metrics,
            (_, "/v1/chat/completions" | "/health" | "/v1/models") => Endpoint::NotAllowed,
            _ => Endpoint::NotFound,
        }
    }
}

/// The protocol whose envelope an error on `path` takes: Anthropic's for `/v1/messages` and
/// everything under it (Claude Code reads `error.type` there), else OpenAI's (chat
/// completions and Responses share it; see [`Protocol::error`]).
pub(super) fn error_protocol(path: &str) -> Protocol {
    if path.starts_with("/v1/messages") {
        Protocol::Anthropic
    } else if path.starts_with("/v1/responses") {
        Protocol::Responses
    } else {
        Protocol::Chat
    }
}

/// Answers an admitted, fully read request at its endpoint.
pub(super) fn answer(req: &Request, conn: &mut Conn, app: &Arc<App>) {
    let (method, path) = (req.head.method(), req.head.path());
    let reply = match Endpoint::of(method, path) {
        Endpoint::Complete(proto) => return completion::complete(req, conn, app, proto),
        Endpoint::CountTokens => local::count_tokens(req),
        Endpoint::Dashboard => local::dashboard(app),
        Endpoint::Health => local::health(app),
        Endpoint::Models => local::models(app),
        Endpoint::Breakers => local::breakers(app),
        Endpoint::ResetBreakers => local::reset_breakers(req, app),
        Endpoint::Stop => local::stop(),
        Endpoint::Usage => local::usage(app),
        Endpoint::History => local::history(req, app),
        Endpoint::Live => Reply::json(200, &live::answer(req, app)),
        Endpoint::Metrics => metrics::reply(req, app),
        Endpoint::NotAllowed => Reply::error(
            error_protocol(path),
            405,
            &format!("{method} is not allowed on {path}"),
            "invalid_request_error",
        ),
        Endpoint::NotFound => {
            let msg = format!("no route for {method} {path}; fcm serves /v1/chat/completions, /v1/messages, /v1/responses, /v1/models and /health");
            Reply::error(error_protocol(path), 404, &msg, "not_found_error")
        }
    };
    conn.send(reply, method == "HEAD");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_and_path_has_one_endpoint() {
        use Endpoint::*;
        for (method, path, want) in [
            ("POST", "/v1/chat/completions", Complete(Protocol::Chat)),
            ("POST", "/v1/messages", Complete(Protocol::Anthropic)),
            ("POST", "/v1/responses", Complete(Protocol::Responses)),
            ("POST", "/v1/messages/count_tokens", CountTokens),
            ("GET", "/", Dashboard),
            ("HEAD", "/", Dashboard),
            ("GET", "/health", Health),
            ("HEAD", "/health", Health),
            ("GET", "/v1/models", Models),
            ("HEAD", "/v1/models", Models),
            ("GET", "/fcm/admin/breakers", Breakers),
            ("POST", "/fcm/admin/breakers/reset", ResetBreakers),
            ("POST", "/fcm/admin/stop", Stop),
            ("GET", "/fcm/admin/usage", Usage),
            ("GET", "/fcm/admin/history", History),
            ("GET", "/fcm/admin/live", Live),
            ("GET", "/metrics", Metrics),
            ("HEAD", "/metrics", Metrics),
            ("POST", "/metrics", NotFound),
            ("GET", "/v1/chat/completions", NotAllowed),
            ("POST", "/health", NotAllowed),
            ("DELETE", "/v1/models", NotAllowed),
            ("GET", "/v1/messages", NotFound),
            ("POST", "/", NotFound),
            ("GET", "/fcm/admin/stop", NotFound),
            ("POST", "/v1/completions", NotFound),
            ("post", "/v1/chat/completions", NotAllowed),
            ("post", "/v1/messages", NotFound),
        ] {
            assert_eq!(Endpoint::of(method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn errors_take_the_envelope_of_their_path() {
        for (path, want) in [
            ("/v1/messages", Protocol::Anthropic),
            ("/v1/messages/count_tokens", Protocol::Anthropic),
            ("/v1/messages/batches", Protocol::Anthropic),
            ("/v1/responses", Protocol::Responses),
            ("/v1/chat/completions", Protocol::Chat),
            ("/v1/models", Protocol::Chat),
            ("/health", Protocol::Chat),
            ("/", Protocol::Chat),
            ("/messages", Protocol::Chat),
        ] {
            assert_eq!(error_protocol(path), want, "{path}");
        }
        // Chat and Responses clients read the same envelope.
        let report = crate::protocol::ErrorReport::new(413, "too big");
        assert_eq!(
            Protocol::Responses.error(&report),
            Protocol::Chat.error(&report)
        );
        assert_eq!(Protocol::Anthropic.error(&report)["type"], "error");
    }
}
