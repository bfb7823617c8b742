//! Terminal escape sequences read out of text: the ones that move the cursor or erase,
//! and where each one ends. Everything else (colours, modes, titles, hyperlinks, charset
//! switches) is skipped whole. Control bytes are ASCII, so reading bytes never splits a
//! character.

/// One escape sequence, as far as a reader of the output cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// A control sequence (`ESC [`): its final byte and its first parameter, if any.
    Csi { fin: u8, n: Option<usize> },
    /// `ESC M`: the cursor up one line.
    ReverseIndex,
    /// Anything else: dropped.
    Skipped,
}

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Reads the sequence that starts at `b[i]` (an ESC); returns it and the index after it.
/// A sequence broken off by a byte that cannot be in it ends before that byte.
pub fn read(b: &[u8], i: usize) -> (Escape, usize) {
    let mut j = i + 1;
    match b.get(j) {
        Some(b'[') => csi(b, j + 1),
        // OSC (titles, hyperlinks): up to BEL or ST (`ESC \`).
        Some(b']') => (Escape::Skipped, string_end(b, j + 1, true)),
        // DCS, SOS, PM, APC: up to ST.
        Some(b'P' | b'X' | b'^' | b'_') => (Escape::Skipped, string_end(b, j + 1, false)),
        Some(b'M') => (Escape::ReverseIndex, j + 1),
        // Charset designations and the like: intermediates, then one final byte.
        Some(0x20..=0x2f) => {
            while b.get(j).is_some_and(|c| (0x20..=0x2f).contains(c)) {
                j += 1;
            }
            if b.get(j).is_some_and(|c| (0x30..=0x7e).contains(c)) {
                j += 1;
            }
            (Escape::Skipped, j)
        }
        // Two-byte sequences (`ESC 7`, `ESC =`, ...).
        Some(0x30..=0x7e) => (Escape::Skipped, j + 1),
        _ => (Escape::Skipped, j),
    }
}

/// A control sequence's parameters, intermediates and final byte, from `j` on.
fn csi(b: &[u8], mut j: usize) -> (Escape, usize) {
    let mut n: Option<usize> = None;
    let mut first = true;
    let mut private = false;
    while let Some(&c) = b.get(j) {
        match c {
            b'0'..=b'9' if first => {
                let d = usize::from(c - b'0');
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d));
            }
            b';' | b':' => first = false,
            b'<'..=b'?' => private = true,
            0x20..=0x3f => {}
            0x40..=0x7e => {
                let e = if private {
                    Escape::Skipped
                } else {
                    Escape::Csi { fin: c, n }
                };
                return (e, j + 1);
            }
            // Not a sequence after all: it ends before this byte.
            _ => return (Escape::Skipped, j),
        }
        j += 1;
    }
    (Escape::Skipped, j)
}

/// The end of an OSC or DCS string from `j`: after its BEL (where `bel` allows) or its ST.
fn string_end(b: &[u8], mut j: usize, bel: bool) -> usize {
    while let Some(&c) = b.get(j) {
        if c == BEL && bel {
            return j + 1;
        }
        if c == ESC {
            return if b.get(j + 1) == Some(&b'\\') {
                j + 2
            } else {
                j + 1
            };
        }
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_and_their_ends() {
        let cases: [(&[u8], Escape, usize); 10] = [
            (
                b"\x1b[0m!",
                Escape::Csi {
                    fin: b'm',
                    n: Some(0),
                },
                4,
            ),
            (b"\x1b[K", Escape::Csi { fin: b'K', n: None }, 3),
            (
                b"\x1b[12;4H",
                Escape::Csi {
                    fin: b'H',
                    n: Some(12),
                },
                7,
            ),
            (b"\x1b[?25l", Escape::Skipped, 6),
            (b"\x1b]8;;http://x\x07link", Escape::Skipped, 14),
            (b"\x1b]0;title\x1b\\text", Escape::Skipped, 11),
            (b"\x1bM", Escape::ReverseIndex, 2),
            (b"\x1b(B", Escape::Skipped, 3),
            (b"\x1b[3\nnext", Escape::Skipped, 3),
            (b"\x1b", Escape::Skipped, 1),
        ];
        for (bytes, want, end) in cases {
            assert_eq!(read(bytes, 0), (want, end), "{bytes:?}");
        }
    }
}
