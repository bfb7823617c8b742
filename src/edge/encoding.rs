//! A body sent gzipped when the client asks for it (`Accept-Encoding: gzip`), as Prometheus
//! does on every scrape: `/metrics` of a server with many models shrinks about tenfold.
//! Only for answers fcm builds whole; streams are never compressed.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Whether an `Accept-Encoding` value accepts gzip: `gzip` (or `x-gzip`) listed without
/// `q=0`. A `*` is not taken as a yes: a client that names no coding gets the plain body.
pub(super) fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|v| {
        v.split(',').any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip")) && !refused
        })
    })
}

/// The stack of the thread that compresses: the compressor's tables (a 32 KiB window and
/// its hash chains, a few hundred KiB) are built on the stack before they are boxed, more
/// than a connection thread's 256 KiB holds.
const GZIP_STACK: usize = 2 * 1024 * 1024;

/// `bytes` in a gzip member, made on a thread of its own (see [`GZIP_STACK`]); `None` when
/// that thread cannot start, and the body goes as it is.
pub(super) fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("fcm-gzip".into())
            .stack_size(GZIP_STACK)
            .spawn_scoped(s, || deflate(bytes))
            .ok()?
            .join()
            .ok()
    })
}

/// The fast level: a scrape's text is repetitive enough that it takes most of the gain
/// there, at a fraction of the default level's time.
fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(bytes.len() / 8), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(bytes);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_taken_when_listed_and_not_refused() {
        for (header, want) in [
            (None, false),
            (Some(""), false),
            (Some("gzip"), true),
            (Some("GZIP"), true),
            (Some("identity, gzip;q=0.5"), true),
            (Some("deflate, x-gzip"), true),
            (Some("gzip;q=0"), false),
            (Some("gzip; q=0.0"), false),
            (Some("br, deflate"), false),
            (Some("*"), false),
            (Some("gzipx"), false),
        ] {
            assert_eq!(accepts_gzip(header), want, "{header:?}");
        }
    }

    #[test]
    fn a_gzipped_body_reads_back_the_same() {
        let text = "fcm_requests_total{outcome=\"served\"} 4\n".repeat(500);
        let packed = gzip(text.as_bytes()).unwrap();
        assert!(packed.len() < text.len() / 10, "{} bytes", packed.len());
        assert_eq!(&packed[..2], [0x1f, 0x8b], "the gzip magic");
        let mut back = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&packed[..]), &mut back)
            .unwrap();
        assert_eq!(back, text);
    }
}
