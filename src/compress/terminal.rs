//! The lossless pass: a tool's output as a person would see it on the terminal, and long
//! runs of one line said once.
//!
//! Text with control characters is played on a small screen model: ANSI escape sequences
//! are dropped (colours, hyperlinks, titles), a carriage return or a backspace moves the
//! cursor back and what follows overwrites the line, `ESC[K` erases, the cursor moves up
//! and down for progress displays that redraw several lines (`ESC[2A`). What the screen
//! holds at the end is the output: every line a person would see, in its last state. A
//! CRLF ending is a line ending, kept as it is. Text without a control character is not
//! played (the common case, checked at a few bytes per cycle).
//!
//! A run of [`MIN_RUN`] or more identical lines (not blank) becomes the line once and a
//! note of how many times it appeared, where the caller allows it: in a shell command's
//! output, or in any output that came with terminal redraws (a file's contents never get
//! here).

use std::borrow::Cow;

/// The shortest run of one line that is folded.
pub const MIN_RUN: usize = 5;

/// Whether runs of a repeated line may be folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    Always,
    /// Only in text that had terminal control characters (it came from a terminal).
    IfTerminal,
    Never,
}

/// `text` without terminal noise (see the module doc); borrowed when nothing changed.
pub fn clean(text: &str, fold: Fold) -> Cow<'_, str> {
    let controls = has_controls(text);
    let fold_runs = match fold {
        Fold::Always => true,
        Fold::IfTerminal => controls,
        Fold::Never => false,
    };
    if !controls {
        return if fold_runs {
            fold_lines(text)
        } else {
            Cow::Borrowed(text)
        };
    }
    let shown = Screen::play(text);
    if fold_runs {
        if let Cow::Owned(folded) = fold_lines(&shown) {
            return Cow::Owned(folded);
        }
    }
    if shown == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(shown)
    }
}

/// Whether `text` holds a control character other than a newline, a tab or the CR of a
/// CRLF. Scanned in blocks without branching per byte; a block with a CR is checked
/// exactly.
pub fn has_controls(text: &str) -> bool {
    let bytes = text.as_bytes();
    const BLOCK: usize = 64;
    for (n, block) in bytes.chunks(BLOCK).enumerate() {
        let mut suspect = false;
        for &b in block {
            suspect |= ((b < 0x20) & (b != b'\n') & (b != b'\t')) | (b == 0x7f);
        }
        if !suspect {
            continue;
        }
        let start = n * BLOCK;
        for (i, &b) in block.iter().enumerate() {
            let control = match b {
                b'\n' | b'\t' => false,
                b'\r' => bytes.get(start + i + 1) != Some(&b'\n'),
                0x7f => true,
                b => b < 0x20,
            };
            if control {
                return true;
            }
        }
    }
    false
}

/// One line of the screen.
#[derive(Default)]
struct Row {
    cells: Vec<char>,
    /// It ended with CRLF.
    crlf: bool,
    /// Something was written over or erased: trailing blanks are the redraw's padding.
    redrawn: bool,
}

/// A screen as tall as the output, with a cursor.
struct Screen {
    rows: Vec<Row>,
    row: usize,
    col: usize,
}

impl Screen {
    /// What `text` leaves on the screen, as lines.
    fn play(text: &str) -> String {
        let mut s = Screen {
            rows: vec![Row::default()],
            row: 0,
            col: 0,
        };
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\n' => s.newline(false),
                '\r' => {
                    // CR LF (CRs before an LF, even several) ends the line as it is.
                    let mut look = chars.clone();
                    let mut crs = 0;
                    while look.peek() == Some(&'\r') {
                        look.next();
                        crs += 1;
                    }
                    if look.peek() == Some(&'\n') {
                        for _ in 0..=crs {
                            chars.next();
                        }
                        s.newline(true);
                    } else {
                        s.col = 0;
                    }
                }
                '\u{8}' => s.col = s.col.saturating_sub(1),
                '\u{1b}' => s.escape(&mut chars),
                '\t' => s.put('\t'),
                c if c < ' ' || c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) => {}
                c => s.put(c),
            }
        }
        s.render()
    }

    fn current(&mut self) -> &mut Row {
        &mut self.rows[self.row]
    }

    fn put(&mut self, c: char) {
        let col = self.col;
        let row = self.current();
        if col < row.cells.len() {
            row.cells[col] = c;
            row.redrawn = true;
        } else {
            row.cells.resize(col, ' ');
            row.cells.push(c);
        }
        self.col += 1;
    }

    fn newline(&mut self, crlf: bool) {
        if crlf {
            self.current().crlf = true;
        }
        self.down(1);
        self.col = 0;
    }

    fn down(&mut self, n: usize) {
        self.row += n;
        while self.rows.len() <= self.row {
            self.rows.push(Row::default());
        }
    }

    /// Plays one escape sequence (the ESC is read); sequences fcm has no use for are
    /// dropped whole.
    fn escape(&mut self, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
        match chars.next() {
            Some('[') => self.csi(chars),
            // OSC (titles, hyperlinks): up to BEL or ST.
            Some(']') => skip_string(chars, true),
            // DCS, SOS, PM, APC: up to ST.
            Some('P' | 'X' | '^' | '_') => skip_string(chars, false),
            // Reverse index: the line above.
            Some('M') => self.row = self.row.saturating_sub(1),
            // Charset designations and the like: intermediates, then one final byte.
            Some(c) if (' '..='/').contains(&c) => {
                for n in chars.by_ref() {
                    if !(' '..='/').contains(&n) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }

    /// A control sequence after `ESC [`: parameters, intermediates, one final byte.
    fn csi(&mut self, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
        let mut first: Option<usize> = None;
        let mut in_first = true;
        let mut private = false;
        let fin = loop {
            let Some(c) = chars.next() else { return };
            match c {
                '0'..='9' if in_first => {
                    let d = c as usize - '0' as usize;
                    first = Some(first.unwrap_or(0).saturating_mul(10).saturating_add(d));
                }
                ';' | ':' => in_first = false,
                '<'..='?' => private = true,
                ' '..='/' | '0'..='9' => {}
                '@'..='~' => break c,
                // Not a sequence after all: it ends here.
                _ => return,
            }
        };
        if private {
            return;
        }
        let n = first.unwrap_or(0);
        let count = n.max(1);
        match fin {
            'K' => self.erase_line(n),
            'A' => self.row = self.row.saturating_sub(count),
            'F' => {
                self.row = self.row.saturating_sub(count);
                self.col = 0;
            }
            'B' => self.down(count),
            'E' => {
                self.down(count);
                self.col = 0;
            }
            'C' => self.col += count,
            'D' => self.col = self.col.saturating_sub(count),
            'G' => self.col = count - 1,
            'J' if n == 0 => {
                self.erase_line(0);
                self.rows.truncate(self.row + 1);
            }
            // Colours, modes, whole-screen clears, absolute positions: nothing a reader
            // of the output needs.
            _ => {}
        }
    }

    fn erase_line(&mut self, how: usize) {
        let col = self.col;
        let row = self.current();
        match how {
            0 => row.cells.truncate(col),
            1 => {
                let end = (col + 1).min(row.cells.len());
                row.cells[..end].iter_mut().for_each(|c| *c = ' ');
            }
            2 => row.cells.clear(),
            _ => return,
        }
        row.redrawn = true;
    }

    fn render(self) -> String {
        let cells: usize = self.rows.iter().map(|r| r.cells.len() + 2).sum();
        let mut out = String::with_capacity(cells);
        let last = self.rows.len() - 1;
        for (i, row) in self.rows.into_iter().enumerate() {
            let mut end = row.cells.len();
            if row.redrawn {
                while end > 0 && row.cells[end - 1] == ' ' {
                    end -= 1;
                }
            }
            out.extend(&row.cells[..end]);
            if i < last {
                out.push_str(if row.crlf { "\r\n" } else { "\n" });
            }
        }
        out
    }
}

/// Skips an OSC, DCS or similar string up to its terminator: ST (`ESC \`), or BEL where
/// `bel` allows.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, bel: bool) {
    while let Some(c) = chars.next() {
        if c == '\u{7}' && bel {
            return;
        }
        if c == '\u{1b}' {
            if chars.peek() == Some(&'\\') {
                chars.next();
            }
            return;
        }
    }
}

/// The note that replaces the repeats of a line.
fn repeat_note(times: usize) -> String {
    format!("[fcm: the line above appeared {times} times in a row]")
}

/// `text` with each run of [`MIN_RUN`] or more identical, non-blank lines said once and
/// a note of how many times; borrowed when there is none (or folding would not shorten
/// it).
pub fn fold_lines(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    // Where the text not yet copied to `out` starts.
    let mut copied = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    let mut at = 0;
    while let Some(line) = lines.next() {
        let start = at;
        at += line.len();
        let content = line_content(line);
        let mut times = 1;
        let mut run_end = at;
        while let Some(next) = lines.peek() {
            if line_content(next) != content {
                break;
            }
            times += 1;
            run_end += next.len();
            lines.next();
        }
        at = run_end;
        let note = repeat_note(times);
        let worth = (times - 1) * (content.len() + 1) > note.len() + 1;
        if times < MIN_RUN || content.trim().is_empty() || !worth {
            continue;
        }
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[copied..start]);
        buf.push_str(line);
        buf.push_str(&note);
        // The run's last line's ending (none at the very end of the text).
        let last_end = &text[start..run_end];
        let ending = if last_end.ends_with("\r\n") {
            "\r\n"
        } else if last_end.ends_with('\n') {
            "\n"
        } else {
            ""
        };
        buf.push_str(ending);
        copied = run_end;
    }
    match out {
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(text),
    }
}

/// A line without its ending.
fn line_content(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lossless(text: &str) -> String {
        clean(text, Fold::Always).into_owned()
    }

    #[test]
    fn escapes_and_redraws_leave_what_the_screen_shows() {
        let cases = [
            // Colours.
            (
                "\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0\n",
                "   Compiling serde v1.0\n",
            ),
            // A progress line redrawn with CR: its last state.
            (
                "Downloading 10%\rDownloading 55%\rDownloading 100%\ndone\n",
                "Downloading 100%\ndone\n",
            ),
            // CR, then erase to the end of the line, then a shorter text.
            (
                "    Building [===>   ] 3/10\r\x1b[K   Compiling a v1\n",
                "   Compiling a v1\n",
            ),
            // A shorter redraw without an erase leaves the old tail, as a terminal does.
            ("abcdef\rXY\n", "XYcdef\n"),
            // Padding of a redraw is not kept.
            ("working...\rdone      \n", "done\n"),
            // Backspaces (a spinner).
            ("wait |\x08/\x08-\x08\\\x08ok\n", "wait ok\n"),
            // Hyperlinks and titles (OSC) go, their text stays.
            (
                "\x1b]8;;https://x.y\x07link\x1b]8;;\x07 and \x1b]0;title\x1b\\text\n",
                "link and text\n",
            ),
            // Two lines redrawn with the cursor moved up.
            (
                "a: 10%\nb: 10%\n\x1b[2Aa: 100%\nb: 100%\n",
                "a: 100%\nb: 100%\n",
            ),
            // Erase below the cursor.
            ("keep\nspinner\x1b[1G\x1b[0J", "keep\n"),
            // CRLF endings are line endings, kept.
            (
                "one\r\ntwo\r\n\x1b[31mred\x1b[0m\r\n",
                "one\r\ntwo\r\nred\r\n",
            ),
            // A trailing CR: the line as it stands.
            ("50%\r", "50%"),
            // Other control characters go.
            ("bell\x07 shift\x0e\x0f\n", "bell shift\n"),
        ];
        for (input, want) in cases {
            assert_eq!(lossless(input), want, "{input:?}");
        }
    }

    #[test]
    fn text_without_controls_is_borrowed() {
        for text in [
            "plain\n",
            "",
            "crlf\r\nonly\r\n",
            "tabs\tand  spaces  \n\n\n",
        ] {
            assert!(
                matches!(clean(text, Fold::Never), Cow::Borrowed(_)),
                "{text:?}"
            );
            assert!(!has_controls(text));
        }
        let long = "x".repeat(200) + "\r\n" + &"y".repeat(100) + "\rz";
        assert!(has_controls(&long), "a lone CR past the first block");
    }

    #[test]
    fn long_runs_of_a_line_fold() {
        let warning = "warning: the same line again\n";
        let text = format!("start\n{}end\n", warning.repeat(40));
        assert_eq!(
            lossless(&text),
            "start\nwarning: the same line again\n[fcm: the line above appeared 40 times in a row]\nend\n"
        );
        // At the very end, without a final newline.
        let text = format!("{}warning: the same line again", warning.repeat(5));
        assert_eq!(
            lossless(&text),
            "warning: the same line again\n[fcm: the line above appeared 6 times in a row]"
        );
        // Short runs, blank lines and short lines are kept.
        for text in [
            warning.repeat(4),
            "\n".repeat(30),
            "   \n".repeat(30),
            "ok\n".repeat(10),
        ] {
            assert_eq!(lossless(&text), text);
        }
        // Only when asked.
        assert_eq!(clean(&warning.repeat(9), Fold::Never), warning.repeat(9));
        assert_eq!(
            clean(&warning.repeat(9), Fold::IfTerminal),
            warning.repeat(9)
        );
        let colored = format!("\x1b[33m{}", warning.repeat(9));
        assert_eq!(
            clean(&colored, Fold::IfTerminal),
            "warning: the same line again\n[fcm: the line above appeared 9 times in a row]\n"
        );
    }

    #[test]
    fn the_same_text_gives_the_same_bytes() {
        let text = "\x1b[32mok\x1b[0m\rprogress 5%\rprogress 100%\n".repeat(50);
        assert_eq!(lossless(&text), lossless(&text));
    }
}
