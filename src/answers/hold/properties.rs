//! Property tests of the hold buffer with its tracker: for generated provider streams read
//! in any pieces, in every validation mode, the verdict is the one the whole stream gets; a
//! stream that succeeds reaches the client byte for byte (but for an event cut after its
//! finish); one that fails shows the client only whole events from before the failure; and
//! the parsed chunks handed to translators are always those of exactly the bytes released.
//! Arbitrary bytes never panic.

use proptest::prelude::*;

use super::*;
use crate::answers::classify::FailureKind;
use crate::answers::gate::arbitrary::{offered, provider_stream, reads, split, sse_bytes, Part};
use crate::answers::sse::{SseParser, MAX_EVENT};
use crate::answers::toolcall::Offered;
use serde_json::Value;
use std::sync::Arc;

const MODES: [ContentValidation; 3] = [
    ContentValidation::Strict,
    ContentValidation::Basic,
    ContentValidation::Off,
];

/// A hold limit small enough that generated streams pass it, so that committing by size
/// is tried too.
const SMALL_LIMIT: usize = 64;

/// What the client and the router see of one stream run through a hold buffer.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    sent: Vec<u8>,
    committed: bool,
    failure: Option<FailureKind>,
    /// A tool call that failed the check after commit (the stream itself went on).
    tool_failure: Option<FailureKind>,
}

/// The chat chunks of whole events in released bytes, as a translator should get them.
fn chunks_of(events: Vec<crate::answers::sse::SseEvent>) -> Vec<Value> {
    events
        .into_iter()
        .map(|e| e.data.trim().to_string())
        .filter(|d| d != "[DONE]")
        .filter_map(|d| serde_json::from_str(&d).ok())
        .collect()
}

/// Feeds `reads`, then the end, checking at every step that releases bytes that the chunks
/// taken are those of exactly these bytes, and that the buffer stays bounded.
fn run(
    mode: ContentValidation,
    reads: &[&[u8]],
    limit: usize,
    tools: &Option<Arc<Offered>>,
) -> Result<Run, TestCaseError> {
    let mut b = HoldBuffer::with_limit(mode, limit);
    b.keep_chunks();
    if let Some(tools) = tools {
        b.check_tools(tools.clone());
    }
    let mut released_parser = SseParser::new();
    let mut run = Run {
        sent: Vec::new(),
        committed: false,
        failure: None,
        tool_failure: None,
    };
    for read in reads.iter().map(Some).chain([None]) {
        let step = match read {
            Some(r) => b.on_bytes(r),
            None => b.on_end(),
        };
        let released: &[u8] = match &step {
            HoldStep::Commit { bytes, .. } | HoldStep::Forward(bytes) => bytes,
            HoldStep::Fail { tail, .. } => tail,
            HoldStep::Hold | HoldStep::End => &[],
        };
        let read_len = read.map_or(0, |r| r.len());
        prop_assert!(b.held_len() <= limit.max(MAX_EVENT) + read_len);
        if run.failure.is_some() {
            prop_assert!(matches!(step, HoldStep::Hold | HoldStep::End), "{step:?}");
        }
        if step == HoldStep::Hold {
            // Nothing released: the chunks wait with the bytes (no caller takes them now).
            continue;
        }
        let mut events = Vec::new();
        released_parser.feed(released, &mut events);
        if read.is_none() {
            released_parser.finish(&mut events);
        }
        prop_assert_eq!(b.take_chunks(), chunks_of(events), "{:?}", step);
        run.sent.extend_from_slice(released);
        match step {
            HoldStep::Commit { .. } => run.committed = true,
            HoldStep::Fail { reject, .. } if run.failure.is_none() => {
                run.failure = Some(reject.kind)
            }
            _ => {}
        }
    }
    run.tool_failure = b.tracker().tool_failure().map(|r| r.kind);
    Ok(run)
}

/// Whether `bytes` ends where a stream can be cut: whole events only.
fn whole_events(bytes: &[u8]) -> bool {
    let mut p = SseParser::new();
    p.feed(bytes, &mut Vec::new());
    !p.has_partial()
}

proptest! {
    #[test]
    fn any_split_of_a_stream_gets_the_verdict_and_bytes_of_the_whole(
        stream in provider_stream(),
        cuts in reads(),
        small in any::<bool>(),
        tools in offered(),
    ) {
        let input = stream.bytes();
        let limit = if small { SMALL_LIMIT } else { HOLD_LIMIT };
        for mode in MODES {
            let whole = run(mode, &[&input], limit, &tools)?;
            let pieces = run(mode, &split(&input, &cuts), limit, &tools)?;
            prop_assert_eq!(pieces.failure, whole.failure, "{:?}", mode);
            prop_assert_eq!(pieces.tool_failure, whole.tool_failure, "{:?}", mode);
            match whole.failure {
                // A stream that succeeds is committed and reaches the client whole, but for
                // an event cut after the answer said it was done (left out).
                None => {
                    prop_assert_eq!(&whole, &pieces, "{:?}", mode);
                    prop_assert!(whole.committed);
                    if whole.sent != input {
                        let rest = &input[whole.sent.len()..];
                        prop_assert!(stream.cut_last_blank, "{:?}", mode);
                        prop_assert!(input.starts_with(&whole.sent), "{:?}", mode);
                        prop_assert!(whole_events(&whole.sent), "{:?}", mode);
                        prop_assert!(!whole_events(rest), "{:?}: one cut event", mode);
                    }
                }
                // One that fails shows only whole events from before the failure; how much
                // of it went out depends on when the reads came (content read apart from a
                // later error is sent; read together with it, it fails over unseen).
                Some(_) => {
                    for sent in [&whole.sent, &pieces.sent] {
                        prop_assert!(input.starts_with(sent), "{:?}", mode);
                        let text = String::from_utf8_lossy(sent);
                        prop_assert!(whole_events(sent), "{:?}: {:?}", mode, text);
                    }
                }
            }
        }
    }

    #[test]
    fn the_verdict_is_what_the_stream_says(stream in provider_stream(), cuts in reads()) {
        let input = stream.bytes();
        let pieces = split(&input, &cuts);
        let errors = stream.parts.iter().any(|p| matches!(p, Part::Error(_) | Part::NamedError));
        let content = !stream.content().trim().is_empty()
            || !stream.reasoning().trim().is_empty()
            || !stream.calls().is_empty();
        let strict = run(ContentValidation::Strict, &pieces, HOLD_LIMIT, &None)?;
        if errors {
            prop_assert_eq!(strict.failure, Some(FailureKind::ErrorPayload));
        } else if !content {
            prop_assert!(matches!(
                strict.failure,
                Some(FailureKind::EmptyStream | FailureKind::EmptyChoices)
            ));
        }
        if strict.failure.is_none() {
            prop_assert!(content && !errors);
        }
    }

    #[test]
    fn arbitrary_bytes_in_any_reads_never_panic(
        input in prop_oneof![sse_bytes(), prop::collection::vec(any::<u8>(), 0..256)],
        cuts in reads(),
        small in any::<bool>(),
        tools in offered(),
    ) {
        let limit = if small { SMALL_LIMIT } else { HOLD_LIMIT };
        for mode in MODES {
            let run = run(mode, &split(&input, &cuts), limit, &tools)?;
            prop_assert!(input.starts_with(&run.sent));
            if run.failure.is_none() && run.sent != input {
                // Only an event cut after the answer said it was done is left out.
                prop_assert!(whole_events(&run.sent), "{:?}", mode);
                prop_assert!(!whole_events(&input[run.sent.len()..]), "{:?}", mode);
            }
        }
    }
}
