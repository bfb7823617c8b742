//! A `fusion` set: its panel answers in parallel (whole answers, never streamed), then its
//! judge is given the conversation and their answers and writes the one answer served
//! (streamed when the client streams). One usable panel answer is served as it came; a
//! judge that cannot be asked or fails leaves the first panel answer served. No panel
//! answer: the rest of the candidates are tried one by one, as for any set. What the
//! request's trace notes say: `fusion:judged:N_of_M`, `fusion:passed_through:...`.

pub(crate) mod bodies;

use std::borrow::Cow;
use std::collections::VecDeque;

use serde_json::Value;

use crate::answers::call::Answer;
use crate::state::config::ModelSet;

use super::attempt::{Job, Sent, Turn, Won};
use super::race::side_by_side;
use super::router::Router;

/// A panel member's answer and what served it.
struct Answered {
    won: Won,
    /// Its answer text, `None` when it holds none the judge could use.
    text: Option<String>,
}

/// Fuses the answers of `set`'s panel (its members left in `queue`, taken off it).
/// `None` when no panel member answered.
pub(in crate::routing) fn fuse<'r>(
    router: &'r Router,
    set: &ModelSet,
    queue: &mut VecDeque<usize>,
    job: &Job<'_>,
    turn: &mut Turn<'r>,
) -> Option<Won> {
    let panel: Vec<usize> = set
        .members()
        .iter()
        .filter_map(|m| router.pool.position(m))
        .filter(|i| queue.contains(i))
        .collect();
    queue.retain(|i| !panel.contains(i));
    let ask = Job {
        body: Cow::Owned(bodies::panel_body(&job.body)),
        stream: false,
        limits: job.limits.clone(),
        prompt_tokens: job.prompt_tokens,
        placeholder: Default::default(),
    };
    let mut members: Vec<(usize, Sent)> = Vec::new();
    for i in panel {
        let Some(trial) = router.admit(i, turn) else {
            continue;
        };
        if let Ok(grant) = router.reserve(i, ask.prompt_tokens, trial, turn) {
            let sent = Sent {
                grant,
                trial,
                prompt_tokens: ask.prompt_tokens,
            };
            members.push((i, sent));
        }
    }
    let asked = members.len();
    let results = side_by_side(members.len(), |n| {
        let (i, sent) = &members[n];
        router.send(router.upstream.as_ref(), *i, &sent.grant, &ask, false)
    });
    let mut answered: Vec<Answered> = Vec::new();
    for ((i, sent), result) in members.into_iter().zip(results) {
        if let Ok((answer, sent)) = router.settle(i, sent, result, turn) {
            let text = match &answer {
                Answer::Full { body, parsed, .. } => {
                    parsed.as_ref().map(bodies::answer_text).unwrap_or_else(|| {
                        serde_json::from_slice::<Value>(body)
                            .ok()
                            .and_then(|v| bodies::answer_text(&v))
                    })
                }
                Answer::Stream(_) => None,
            };
            answered.push(Answered {
                won: Won::new(answer, sent, i),
                text,
            });
        }
    }
    let notes = &mut turn.trace.notes;
    if answered.is_empty() {
        notes.push(format!("fusion:no_panel_answer:0_of_{asked}"));
        return None;
    }
    let texts: Vec<&str> = answered.iter().filter_map(|a| a.text.as_deref()).collect();
    let count = format!("{}_of_{asked}", answered.len());
    if texts.len() < 2 {
        notes.push(format!("fusion:passed_through:{count}"));
        return Some(first(answered));
    }
    match judge(router, set, job, &texts, turn) {
        Some(w) => {
            turn.trace.notes.push(format!("fusion:judged:{count}"));
            Some(w)
        }
        None => {
            turn.trace
                .notes
                .push(format!("fusion:judge_failed:passed_through:{count}"));
            Some(first(answered))
        }
    }
}

/// The judge's merge of `texts`; `None` when the judge is unknown, has no key, may not
/// be sent a request now, or fails (each in the trace like any candidate's).
fn judge<'r>(
    router: &'r Router,
    set: &ModelSet,
    job: &Job<'_>,
    texts: &[&str],
    turn: &mut Turn<'r>,
) -> Option<Won> {
    let j = router.pool.position(set.judge.as_deref()?)?;
    if router.pool.get(j).missing_key.is_some() {
        return None;
    }
    let body = bodies::judge_body(&job.body, texts);
    let prompt_tokens = crate::tokens::prompt(&body);
    let merge = Job {
        prompt_tokens,
        body: Cow::Owned(body),
        stream: job.stream,
        limits: job.limits.clone(),
        placeholder: Default::default(),
    };
    // The judge's window must hold the conversation and the panel's answers.
    let needed = std::mem::replace(
        &mut turn.needed,
        crate::tokens::with_answer(prompt_tokens, &merge.body),
    );
    let admitted = router.admit(j, turn);
    turn.needed = needed;
    router.try_one(j, &merge, admitted?, turn).ok()
}

/// The first panel answer with text (the panel's order), else the first answer.
fn first(mut answered: Vec<Answered>) -> Won {
    let at = answered.iter().position(|a| a.text.is_some()).unwrap_or(0);
    answered.swap_remove(at).won
}
