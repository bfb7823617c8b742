//! The whole-screen model, for output that moves the cursor up and down to redraw several
//! lines at once (progress displays of parallel downloads): a screen as tall as the
//! output, with a cursor; what it holds at the end is what a person sees. Output that only
//! redraws its current line is played one line at a time instead (`terminal`).

use super::escape::{self, Escape};

/// One line of the screen.
#[derive(Default)]
struct Row {
    cells: Vec<char>,
    /// It ended with CRLF.
    crlf: bool,
    /// Something was written over or erased: trailing blanks are the redraw's padding.
    redrawn: bool,
}

struct Screen {
    rows: Vec<Row>,
    row: usize,
    col: usize,
}

/// What `text` leaves on the screen, as lines.
pub fn play(text: &str) -> String {
    let b = text.as_bytes();
    let mut s = Screen {
        rows: vec![Row::default()],
        row: 0,
        col: 0,
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                s.newline(false);
                i += 1;
            }
            b'\r' => {
                // CR LF (CRs before an LF, even several) ends the line as it is.
                let mut j = i;
                while b.get(j) == Some(&b'\r') {
                    j += 1;
                }
                if b.get(j) == Some(&b'\n') {
                    s.newline(true);
                    i = j + 1;
                } else {
                    s.col = 0;
                    i += 1;
                }
            }
            0x08 => {
                s.col = s.col.saturating_sub(1);
                i += 1;
            }
            0x1b => {
                let (e, next) = escape::read(b, i);
                match e {
                    Escape::Csi { fin, n } => s.csi(fin, n),
                    Escape::ReverseIndex => s.row = s.row.saturating_sub(1),
                    Escape::Skipped => {}
                }
                i = next;
            }
            b'\t' => {
                s.put('\t');
                i += 1;
            }
            c if c < 0x20 || c == 0x7f => i += 1,
            _ => {
                let c = text[i..].chars().next().expect("i is on a character");
                s.put(c);
                i += c.len_utf8();
            }
        }
    }
    s.render()
}

impl Screen {
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

    /// A control sequence: cursor moves and erases are played, the rest dropped (colours,
    /// modes, whole-screen clears, absolute positions: nothing a reader needs).
    fn csi(&mut self, fin: u8, n: Option<usize>) {
        let n = n.unwrap_or(0);
        let count = n.max(1);
        match fin {
            b'K' => self.erase_line(n),
            b'A' => self.row = self.row.saturating_sub(count),
            b'F' => {
                self.row = self.row.saturating_sub(count);
                self.col = 0;
            }
            b'B' => self.down(count),
            b'E' => {
                self.down(count);
                self.col = 0;
            }
            b'C' => self.col += count,
            b'D' => self.col = self.col.saturating_sub(count),
            b'G' => self.col = count - 1,
            b'J' if n == 0 => {
                self.erase_line(0);
                self.rows.truncate(self.row + 1);
            }
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

#[cfg(test)]
mod tests {
    #[test]
    fn lines_redrawn_from_below() {
        let cases = [
            (
                "a: 10%\nb: 10%\n\x1b[2Aa: 100%\nb: 100%\n",
                "a: 100%\nb: 100%\n",
            ),
            // Reverse index, then erase below.
            ("one\ntwo\x1bM\rONE\x1b[0J", "ONE"),
            ("x\x1b[1B\ry\n", "x\ny\n"),
            ("\x1b[1;32mok\x1b[0m\r\nend", "ok\r\nend"),
        ];
        for (input, want) in cases {
            assert_eq!(super::play(input), want, "{input:?}");
        }
    }
}
