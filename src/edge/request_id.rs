//! The id a request is known by in its answer's `x-request-id`, the history and the log: the
//! client's own when it is a sane token, else a new one. A client's id is echoed in headers
//! and written to files, so nothing but a short run of plain characters is taken from it.

use crate::edge::http::Head;
use crate::state::trace::new_request_id;

/// Longest client-chosen request id kept.
const MAX_LEN: usize = 128;

/// The client's `x-request-id` when it is a sane token, else a new one.
pub(super) fn request_id(head: &Head) -> String {
    match head.header("x-request-id") {
        Some(id) if sane(id) => id.to_string(),
        _ => new_request_id(),
    }
}

/// Letters, digits and `-_.:`, at most [`MAX_LEN`] of them: nothing that could end a header
/// line or hide in a file.
fn sane(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_id_is_kept_only_when_sane() {
        for (id, kept) in [
            ("req-42", true),
            ("a.b:c_d-E9", true),
            (&"x".repeat(MAX_LEN) as &str, true),
            (&"x".repeat(MAX_LEN + 1) as &str, false),
            ("", false),
            ("two words", false),
            ("semi;colon", false),
            ("naïve", false),
            ("line\r\nbreak", false),
        ] {
            assert_eq!(sane(id), kept, "{id:?}");
        }
    }

    #[test]
    fn an_id_is_made_when_the_client_sent_none_or_a_bad_one() {
        let head = |extra: &str| {
            let raw = format!("GET / HTTP/1.1\r\nHost: h\r\n{extra}\r\n");
            crate::edge::http::read_head(&mut raw.as_bytes()).unwrap()
        };
        assert_eq!(request_id(&head("x-request-id: abc-1\r\n")), "abc-1");
        assert!(request_id(&head("")).starts_with("fcm-"));
        assert!(request_id(&head("x-request-id: a b\r\n")).starts_with("fcm-"));
    }
}
