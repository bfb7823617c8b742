//! The completion flow, top to bottom: parse the client's body, translate it to chat
//! (`protocol`), read what it needs, resolve its model name, compress its tool results
//! (as the router is set), let the router try models (`routing`), then deliver the answer
//! or the refusal in the client's own shapes. Every request that reaches this file is
//! logged and recorded in the history, refused or served. Which model to try, and whether
//! an answer is good, is the router's business, not this file's.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use crate::answers::classify::FailureKind;
use crate::answers::stream::StreamEnd;
use crate::edge::app::App;
use crate::edge::forward;
use crate::edge::http::Request;
use crate::edge::reply::{Conn, Reply, StreamReply};
use crate::edge::request_id::request_id;
use crate::edge::request_log;
use crate::protocol::{self, BadRequest, ErrorReport, Protocol};
use crate::routing::carry::Carried;
use crate::routing::continuation::{Broken, Continued};
use crate::routing::{Ask, Delivery, Refused, Route, Served, SessionName};
use crate::state::trace::{Outcome, Trace};

/// A completion request in any protocol: translate, route, answer in the client's shapes.
pub(super) fn complete(req: &Request, conn: &mut Conn, app: &Arc<App>, proto: Protocol) {
    let started = Instant::now();
    let id = request_id(&req.head);
    // Needs are read from the client's own body: translation may drop what a chat provider
    // cannot take (a PDF document), but the choice of model must still know about it.
    let mut needs = crate::capability::Needs::default();
    let mut session = None;
    let mut client = Arc::default();
    let chat = serde_json::from_slice::<Value>(&req.body)
        .map_err(|e| BadRequest::NotJson(e.to_string()))
        .and_then(|parsed| {
            // The same field in all three protocols: anything but a boolean is a mistake to
            // name, not to guess at.
            if parsed
                .get("stream")
                .is_some_and(|s| !s.is_boolean() && !s.is_null())
            {
                return Err(BadRequest::Shape("\"stream\" must be true or false"));
            }
            needs = crate::capability::detect(&parsed);
            session = SessionName::of(|h| req.head.header(h), &parsed);
            client = Arc::new(proto.client_tools(&parsed));
            proto.to_chat(parsed)
        });
    let mut chat = match chat {
        Ok(c) => c,
        Err(why) => {
            let trace = Trace::new(&id, "", false);
            return reject(conn, app, proto, trace, started, 400, &why.to_string());
        }
    };
    let requested = chat
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fcm")
        .to_string();
    let stream = chat.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let mut trace = Trace::new(&id, &requested, stream);
    let route = match app.router.resolve(&requested) {
        Ok(r) => r,
        Err(unknown) => return reject(conn, app, proto, trace, started, 404, &unknown.to_string()),
    };
    // Once, before any attempt: every attempt and any continuation sends the same bytes.
    let compress = req.head.header("x-fcm-compress");
    app.router.compress(&route, compress, &mut chat, &mut trace);
    // Tool calls are checked in strict mode only (`contentValidation: basic|off` turn it off).
    let strict =
        app.router.failover.content_validation == crate::answers::gate::ContentValidation::Strict;
    let offered = crate::answers::toolcall::Offered::of(&chat).filter(|_| strict);
    // The gate checks every call: with no tools offered, any call names a tool the client
    // does not have, and fails over like a broken one.
    let tools = offered.map(Arc::new);
    let checked = match &tools {
        Some(t) => Some(t.clone()),
        None if strict => Some(crate::answers::toolcall::Offered::none()),
        None => None,
    };
    let ask = Ask {
        body: &chat,
        stream,
        needs,
        tools: checked,
        session,
        exclude: None,
    };
    let asked = Asked {
        proto,
        requested: &requested,
        stream,
        started,
        tools: &tools,
        client,
        route: &route,
        ask: &ask,
    };
    match app.router.route(&route, &ask, trace) {
        Ok(served) => deliver(conn, app, served, &asked),
        Err(refused) => refuse(conn, app, *refused, started, proto),
    }
}

/// Refuses a request before routing in the client's protocol, and records it.
pub(super) fn reject(
    conn: &mut Conn,
    app: &App,
    proto: Protocol,
    mut trace: Trace,
    started: Instant,
    status: u16,
    message: &str,
) {
    trace.outcome = Outcome::Rejected;
    conn.send(
        Reply::json(status, &proto.error(&ErrorReport::new(status, message))).with_trace(&trace),
        false,
    );
    log(app, &trace, status, started);
    app.router.complete(trace, started);
}

/// What delivering an answer needs to know of the request.
struct Asked<'a> {
    proto: Protocol,
    /// The model name the client asked for (answers carry it back).
    requested: &'a str,
    stream: bool,
    started: Instant,
    /// The tools it offered: every call handed over must pass the check.
    tools: &'a Option<Arc<crate::answers::toolcall::Offered>>,
    /// How the client runs the calls of its tools.
    client: Arc<protocol::freeform::ClientTools>,
    /// Where it was routed, and what was asked: a continuation is routed the same way.
    route: &'a Route,
    ask: &'a Ask<'a>,
}

impl Asked<'_> {
    fn shape(&self, app: &App) -> protocol::StreamShape {
        self.proto.stream_shape(
            self.requested,
            app.router.reasoning.split_think_tags,
            self.tools.clone(),
            self.client.clone(),
        )
    }
}

/// What a refusal's error answer says, for the client's protocol to wrap: the outcome as
/// its code and every failed attempt.
fn refusal_report(refused: &Refused) -> ErrorReport<'_> {
    let attempts: Vec<Value> = refused
        .details
        .iter()
        .map(|a| json!({"model": a.model, "status": a.status, "kind": a.kind, "detail": a.detail}))
        .collect();
    ErrorReport {
        code: Some(refused.trace.outcome.as_str()),
        attempts: Some(Value::Array(attempts)),
        ..ErrorReport::new(refused.status, &refused.message)
    }
}

fn refuse(conn: &mut Conn, app: &App, refused: Refused, started: Instant, proto: Protocol) {
    let body = proto.error(&refusal_report(&refused));
    let mut reply = Reply::json(refused.status, &body).with_trace(&refused.trace);
    if let Some(secs) = refused.retry_after_secs {
        reply = reply.header("retry-after", &secs.to_string());
    }
    conn.send(reply, false);
    log(app, &refused.trace, refused.status, started);
    app.router.complete(refused.trace, started);
}

fn deliver(conn: &mut Conn, app: &App, served: Served<'_>, asked: &Asked<'_>) {
    let Served {
        delivery,
        mut trace,
    } = served;
    let (proto, requested, started) = (asked.proto, asked.requested, asked.started);
    let split_think = app.router.reasoning.split_think_tags;
    match delivery {
        Delivery::Full {
            status,
            body,
            parsed,
            stats,
        } if !asked.stream => {
            trace.completion_tokens = stats.completion_tokens;
            // Provider state is rare: a body that names none is not parsed for it.
            let carried = match &parsed {
                Some(v) => Carried::of_answer(v),
                None if carries_state(&body) => serde_json::from_slice(&body)
                    .map(|v| Carried::of_answer(&v))
                    .unwrap_or_default(),
                None => Carried::default(),
            };
            let mut ids = protocol::CallIds::default();
            let tools = asked.tools.as_deref();
            let body = proto.answer(
                body,
                parsed,
                requested,
                split_think,
                protocol::RequestTools {
                    offered: tools,
                    client: &asked.client,
                },
                &mut ids,
            );
            keep_carried(app, &trace, &(carried, ids));
            let reply = Reply::new(status, "application/json", body);
            conn.send(reply.with_trace(&trace), false);
        }
        Delivery::Full {
            body,
            parsed,
            stats,
            ..
        } => {
            // The provider ignored `stream: true`: give the client the stream it asked for.
            let v = parsed.unwrap_or_else(|| serde_json::from_slice(&body).unwrap_or(Value::Null));
            let mut client = StreamReply::new(conn, &trace);
            let mut relay = forward::Relay::new(&mut client, asked.shape(app));
            // Not a continuation: nothing to join, always sent.
            relay.whole(&v, app.router.secrets());
            trace.completion_tokens = stats.completion_tokens;
            keep_carried(app, &trace, &relay.take_carried());
        }
        Delivery::Stream(committed) => {
            let mut client = StreamReply::new(conn, &trace);
            let mut relay = forward::Relay::new(&mut client, asked.shape(app));
            trace = relay_stream(app, asked, &mut relay, *committed, trace);
            keep_carried(app, &trace, &relay.take_carried());
        }
    }
    log(app, &trace, 200, started);
    app.router.complete(trace, started);
}

/// Forwards a committed stream; when it breaks after content, the router says whether
/// another model finishes the answer in the same client stream (`Router::continue_broken`),
/// joined to what the client has (a repeat left out; one that started over refused);
/// otherwise the client is told the answer broke off, in its own protocol. The trace comes
/// back with every attempt; a finished continuation is [`Outcome::Continued`].
fn relay_stream(
    app: &App,
    asked: &Asked<'_>,
    relay: &mut forward::Relay<'_>,
    first: crate::routing::Committed<'_>,
    mut trace: Trace,
) -> Trace {
    let mut committed = first;
    let mut continued = 0;
    // Why the answer broke: what the client is told when it cannot be finished.
    let mut why = Box::<str>::default();
    loop {
        let pumped = relay.pump(&mut committed.stream);
        note_left_out(relay, &mut trace);
        let broke = match pumped {
            forward::Pumped::Done(end) => {
                committed.finish(&end, &mut trace);
                if continued > 0 && trace.outcome == Outcome::Served {
                    trace.outcome = Outcome::Continued;
                }
                return trace;
            }
            forward::Pumped::Broke(f) => f,
        };
        let secrets = committed.stream.secrets().clone();
        let model = trace.served_model.clone().unwrap_or_default();
        committed.finish(&StreamEnd::Failed(broke.clone()), &mut trace);
        let misfit = broke.kind() == FailureKind::ContinuationMisfit;
        if misfit {
            why = format!("{why}; {MISFIT}").into();
        } else {
            why = broke.detail.clone();
        }
        let given = relay.given();
        let (text, call_begun) = (given.text.clone(), given.call_begun);
        let broken = Broken {
            model: &model,
            text: &text,
            call_begun,
            client_here: relay.client_here(),
            continued,
            misfit,
        };
        let router = &app.router;
        match with_keep_alive(relay, || {
            router.continue_broken(asked.route, asked.ask, &broken, trace)
        }) {
            Continued::Not(kept) => {
                relay.fail(&why, secrets);
                return kept;
            }
            Continued::Served(served) => {
                continued += 1;
                trace = served.trace;
                relay.join_next();
                match served.delivery {
                    Delivery::Stream(c) => committed = *c,
                    Delivery::Full {
                        body,
                        parsed,
                        stats,
                        ..
                    } => {
                        let v = parsed.unwrap_or_else(|| {
                            serde_json::from_slice(&body).unwrap_or(Value::Null)
                        });
                        trace.completion_tokens = stats.completion_tokens;
                        if !relay.whole(&v, app.router.secrets()) {
                            // Recorded as served already: the trace says why it was not.
                            let model = trace.served_model.clone().unwrap_or_default();
                            trace.notes.push(format!("continuation_misfit:{model}"));
                            trace.outcome = Outcome::StreamFailedAfterContent;
                            relay.fail(&format!("{why}; {MISFIT}"), secrets);
                            return trace;
                        }
                        note_left_out(relay, &mut trace);
                        trace.outcome = Outcome::Continued;
                        return trace;
                    }
                }
            }
            Continued::Refused(refused) => {
                let mut trace = refused.trace;
                trace.outcome = Outcome::StreamFailedAfterContent;
                let detail = format!("{why}; no other model could finish it");
                relay.fail(&detail, secrets);
                return trace;
            }
        }
    }
}

/// How often a client whose answer broke hears from fcm while the next model is sought.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `search` (the search for a model to finish a broken answer: seconds, when models
/// are slow to start) while the client is sent an SSE comment every [`KEEP_ALIVE`].
fn with_keep_alive<T: Send>(
    relay: &mut forward::Relay<'_>,
    search: impl FnOnce() -> T + Send,
) -> T {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let searching = s.spawn(move || {
            let _ = tx.send(search());
        });
        loop {
            match rx.recv_timeout(KEEP_ALIVE) {
                Ok(found) => return found,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => relay.keep_alive(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match searching.join() {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(()) => unreachable!("the search sends what it found before it ends"),
                },
            }
        }
    })
}

/// What the client is told of a continuation that started the answer over.
const MISFIT: &str = "the next model started the answer over instead of finishing it";

/// Notes in the trace how much of a continuation repeated what the client had, and was
/// left out (`overlap_dropped:<characters>`).
fn note_left_out(relay: &mut forward::Relay<'_>, trace: &mut Trace) {
    let n = relay.take_left_out();
    if n > 0 {
        trace.notes.push(format!("overlap_dropped:{n}"));
    }
}

/// Keeps what the served answer carried for the conversation's next turn (see
/// `routing::carry`).
fn keep_carried(app: &App, trace: &Trace, (carried, ids): &(Carried, protocol::CallIds)) {
    if carried.is_empty() {
        return;
    }
    if let Some(provider) = trace
        .served_model
        .as_deref()
        .and_then(|m| m.split('/').next())
    {
        app.router
            .carry
            .keep(provider, carried, &ids.0, crate::time::now_ms());
    }
}

/// Whether a whole chat answer's bytes may carry state a later turn needs.
fn carries_state(body: &[u8]) -> bool {
    let has = |needle: &[u8]| memchr::memmem::find(body, needle).is_some();
    has(b"\"extra_content\"") || has(b"\"reasoning_details\"")
}

/// The request's line in the request log (unless `--quiet`), without a secret the client
/// sent.
fn log(app: &App, trace: &Trace, status: u16, started: Instant) {
    use std::fmt::Write;
    if app.quiet {
        return;
    }
    let mut line = String::with_capacity(128);
    line.push_str(&app.router.redact(&trace.id));
    line.push(' ');
    line.push_str(&app.router.redact(&trace.requested_model));
    let _ = write!(line, " {status} {} ms ", started.elapsed().as_millis());
    trace.write_decision(&mut line);
    line.push('\n');
    request_log::line(&line);
}
