//! Drawing `fcm top`: a [`Board`] onto a ratatui frame, and nothing else (no terminal, no
//! I/O), so every size can be drawn into a test buffer. A header (the server, or why there
//! is none), the models table (columns dropped from the least needed as the width shrinks),
//! the feed of decisions, the key line, and the help screen over them on `?`.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::answers::classify::FailureKind;
use crate::edge::live::{Decision, LiveModel};
use crate::routing::{Evidence, EvidenceFrom};
use crate::state::breaker::BreakerState;
use crate::state::trace::Outcome;
use crate::time::human_ms;

use super::board::{Board, Column, PIN_SET};

/// Below this the screen only says it is too small.
pub(crate) const MIN_WIDTH: u16 = 40;
pub(crate) const MIN_HEIGHT: u16 = 10;

/// The narrowest the Model column gets before other columns go.
const MODEL_MIN: u16 = 18;
/// The widest it gets.
const MODEL_MAX: u16 = 44;

/// Columns in the order they are dropped as the screen narrows (Model and State stay).
const DROP_ORDER: [Column; 9] = [
    Column::Tier,
    Column::Pin,
    Column::Evidence,
    Column::Rank,
    Column::Budget,
    Column::Conversations,
    Column::Left,
    Column::Success,
    Column::Ttft,
];

fn width(c: Column) -> u16 {
    match c {
        Column::Rank => 3,
        Column::Model => MODEL_MIN,
        Column::Tier => 4,
        Column::State => 9,
        // "23h59m overload", a skip's "provider_blocked".
        Column::Left => 16,
        Column::Evidence => 13,
        Column::Ttft => 9,
        Column::Success => 7,
        Column::Budget => 10,
        Column::Conversations => 4,
        Column::Pin => 3,
    }
}

/// The columns that fit in `room` cells, and the Model column's width.
pub(crate) fn columns(room: u16, longest_model: u16) -> (Vec<Column>, u16) {
    let mut shown: Vec<Column> = Column::ALL.to_vec();
    let need = |cols: &[Column]| -> u16 {
        cols.iter().map(|c| width(*c)).sum::<u16>() + cols.len().saturating_sub(1) as u16
    };
    for drop in DROP_ORDER {
        if need(&shown) <= room {
            break;
        }
        shown.retain(|c| *c != drop);
    }
    let spare = room.saturating_sub(need(&shown));
    let model = (MODEL_MIN + spare).min(longest_model.clamp(MODEL_MIN, MODEL_MAX));
    (shown, model)
}

/// Draws the whole screen.
pub(crate) fn draw(f: &mut Frame, board: &Board) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "The terminal is too small for fcm top ({}x{}): it needs at least {MIN_WIDTH}x{MIN_HEIGHT}. q quits.",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let [head, body, keys] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    header(f, head, board);
    let model_rows = board.snapshot.models.len() as u16;
    // The table gets what its rows need (up to three fifths), the feed at least 4 lines.
    let table_height = (model_rows + 3)
        .min(body.height * 3 / 5)
        .max(5)
        .min(body.height);
    let [table, feed] =
        Layout::vertical([Constraint::Length(table_height), Constraint::Min(0)]).areas(body);
    models(f, table, board);
    decisions(f, feed, board);
    key_line(f, keys, board);
    if board.help {
        help(f, area, board);
    }
}

fn header(f: &mut Frame, area: Rect, board: &Board) {
    let s = &board.snapshot;
    let mut first = vec![Span::styled("fcm top", Style::new().bold())];
    match &s.server {
        Some(srv) => {
            let open = s
                .models
                .iter()
                .filter(|m| m.status.state == BreakerState::Open)
                .count();
            first.push(Span::raw(format!(
                " · http://{}/v1 · pid {} · up {} · {} in flight · {} conversations",
                srv.address,
                srv.pid,
                human_ms(srv.uptime_secs * 1000),
                srv.in_flight,
                srv.conversations,
            )));
            if open > 0 {
                first.push(Span::styled(
                    format!(" · {open} OPEN"),
                    Style::new().fg(Color::Red).bold(),
                ));
            }
            if let Some(set) = &s.active_set {
                first.push(Span::raw(format!(" · set {}", set.name)));
            }
        }
        None if !board.loaded => first.push(Span::raw(" · reading...")),
        None => first.push(Span::styled(
            format!(
                " · {}",
                s.note.as_deref().unwrap_or("no fcm serve is running")
            ),
            Style::new().fg(Color::Yellow),
        )),
    }
    let shown = board.rows().len();
    let mut second = vec![Span::raw(format!(
        "{} models{} · sorted by {} {}",
        s.models.len(),
        if shown == s.models.len() {
            String::new()
        } else {
            format!(" ({shown} shown)")
        },
        match board.sort {
            Column::Rank => "rank",
            c => c.title(),
        },
        if board.inverted { "(inverted)" } else { "" },
    ))];
    if board.editing_filter || !board.filter.is_empty() {
        second.push(Span::styled(
            format!(
                " · filter: {}{}",
                board.filter,
                if board.editing_filter { "_" } else { "" }
            ),
            Style::new().fg(Color::Cyan),
        ));
    }
    if s.server.is_none() && board.loaded {
        let bench = match &board.bench_at {
            Some(at) => format!("last bench {at}"),
            None => "no bench yet (fcm bench)".into(),
        };
        second.push(Span::raw(format!(" · catalog and {bench}")));
        if !s.server_recorded {
            second.push(Span::styled(
                " · press s to start fcm serve in the background",
                Style::new().fg(Color::Green).bold(),
            ));
        }
    } else if board.pins_pending() {
        second.push(Span::styled(
            format!(" · set {PIN_SET} changed in config.json: restart fcm serve to apply"),
            Style::new().fg(Color::Yellow),
        ));
    }
    f.render_widget(
        Paragraph::new(vec![Line::from(first), Line::from(second)]),
        area,
    );
}

fn state_cell(m: &LiveModel) -> Cell<'static> {
    let s = &m.status;
    let (text, color) = match s.state {
        BreakerState::Closed if s.pause_ms_left > 0 => ("PAUSED", Color::Magenta),
        BreakerState::Closed => ("CLOSED", Color::Green),
        BreakerState::Degraded => ("DEGRADED", Color::Yellow),
        BreakerState::HalfOpen => ("HALF_OPEN", Color::Cyan),
        BreakerState::Open => ("OPEN", Color::Red),
    };
    let mut style = Style::new().fg(color);
    if s.state == BreakerState::Open {
        style = style.bold();
    }
    Cell::from(text).style(style)
}

fn left_text(m: &LiveModel) -> String {
    let s = &m.status;
    if s.cooldown_ms_left > 0 {
        return human_ms(s.cooldown_ms_left);
    }
    if s.pause_ms_left > 0 {
        let why = match s.paused_for {
            Some(FailureKind::ModelOverloaded) => "overload",
            Some(FailureKind::ProviderNotice) => "notice",
            Some(FailureKind::ModelNotFound) => "gone",
            Some(k) => k.as_str(),
            None => "quota",
        };
        return format!("{} {why}", human_ms(s.pause_ms_left));
    }
    match s.skipped {
        Some(reason) => reason.as_str().to_string(),
        None => "-".into(),
    }
}

fn evidence_text(m: &LiveModel) -> String {
    let e = match m.status.evidence {
        Evidence::Proven => "proven",
        Evidence::Unknown => "unknown",
        Evidence::Failing => "failing",
    };
    match m.status.evidence_from {
        EvidenceFrom::Live => format!("{e} live"),
        EvidenceFrom::Bench => format!("{e} bench"),
        EvidenceFrom::None => e.to_string(),
    }
}

fn ms_text(ms: u64) -> String {
    if ms < 10_000 {
        format!("{ms} ms")
    } else {
        human_ms(ms)
    }
}

fn budget_text(m: &LiveModel) -> String {
    let b = &m.status.budget;
    match (b.requests, b.requests_per_day, b.tokens) {
        (Some(left), Some(limit), _) => format!("{left}/{limit}"),
        (Some(left), None, _) => format!("{left} req"),
        (None, _, Some(t)) if t >= 10_000 => format!("{}k tok", t / 1000),
        (None, _, Some(t)) => format!("{t} tok"),
        _ => "-".into(),
    }
}

fn cell(board: &Board, m: &LiveModel, c: Column, pin_column: bool) -> Cell<'static> {
    let s = &m.status;
    let dim = Style::new().fg(Color::DarkGray);
    match c {
        Column::Rank => Cell::from(s.rank.map_or("-".into(), |r| r.to_string())),
        Column::Model => {
            let mark = if !pin_column && board.pinned(&s.model) {
                "*"
            } else {
                ""
            };
            Cell::from(format!("{mark}{}", s.model))
        }
        Column::Tier => Cell::from(m.tier.clone()),
        Column::State => state_cell(m),
        Column::Left => Cell::from(left_text(m)),
        Column::Evidence => {
            let style = match s.evidence {
                Evidence::Failing => Style::new().fg(Color::Red),
                Evidence::Proven => Style::new(),
                Evidence::Unknown => dim,
            };
            Cell::from(evidence_text(m)).style(style)
        }
        Column::Ttft => match board.ttft(m) {
            Some((t, false)) => Cell::from(ms_text(t)),
            Some((t, true)) => Cell::from(format!("{} b", ms_text(t))).style(dim),
            None => Cell::from("-"),
        },
        Column::Success => match board.success(m) {
            Some((r, bench)) => {
                let text = format!("{:.0}%{}", r * 100.0, if bench { " b" } else { "" });
                let style = if bench {
                    dim
                } else if r < 0.5 {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new()
                };
                Cell::from(text).style(style)
            }
            None => Cell::from("-"),
        },
        Column::Budget => {
            let style = if s.budget.requests == Some(0) {
                Style::new().fg(Color::Red)
            } else {
                Style::new()
            };
            Cell::from(budget_text(m)).style(style)
        }
        Column::Conversations => Cell::from(s.conversations.to_string()),
        Column::Pin => Cell::from(if board.pinned(&s.model) {
            "*"
        } else if s.in_active_set {
            "set"
        } else {
            ""
        }),
    }
}

fn models(f: &mut Frame, area: Rect, board: &Board) {
    let rows = board.rows();
    let longest = rows
        .iter()
        .map(|m| m.status.model.chars().count() as u16 + 1)
        .max()
        .unwrap_or(MODEL_MIN);
    let (cols, model_width) = columns(area.width.saturating_sub(2), longest);
    let pin_column = cols.contains(&Column::Pin);
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            Column::Model => Constraint::Length(model_width),
            c => Constraint::Length(width(*c)),
        })
        .collect();
    let header = Row::new(cols.iter().map(|c| {
        let title = if *c == board.sort {
            format!("{}{}", c.title(), if board.inverted { "↑" } else { "↓" })
        } else {
            c.title().to_string()
        };
        Cell::from(title)
    }))
    .style(Style::new().bold().add_modifier(Modifier::UNDERLINED));
    let body: Vec<Row> = rows
        .iter()
        .map(|m| Row::new(cols.iter().map(|c| cell(board, m, *c, pin_column))))
        .collect();
    let title = if board.snapshot.server.is_some() {
        " Models (live) "
    } else {
        " Models (catalog, last bench) "
    };
    let empty = rows.is_empty();
    let table = Table::new(body, widths)
        .header(header)
        .block(Block::bordered().title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(board.selected_index(&rows));
    f.render_stateful_widget(table, area, &mut state);
    if empty {
        let msg = if board.snapshot.models.is_empty() {
            "no routable model: `fcm keys set` adds a provider's key"
        } else {
            "no model matches the filter (Esc clears it)"
        };
        let inner = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: 1.min(area.height.saturating_sub(3)),
        };
        f.render_widget(Paragraph::new(msg).fg(Color::DarkGray), inner);
    }
}

fn outcome_style(o: Outcome) -> Style {
    match o {
        Outcome::Served | Outcome::Continued => Style::new().fg(Color::Green),
        Outcome::Rejected | Outcome::ClientError | Outcome::ClientAborted => {
            Style::new().fg(Color::Yellow)
        }
        Outcome::AllFailed | Outcome::StreamFailedAfterContent => {
            Style::new().fg(Color::Red).bold()
        }
    }
}

/// One decision: time, request id, model asked, who served and how, the attempt chain,
/// what affinity did, wall time.
pub(crate) fn decision_line(d: &Decision) -> Line<'static> {
    let t = &d.trace;
    let time = t.time.get(11..19).unwrap_or(&t.time).to_string();
    let mut spans = vec![
        Span::styled(time, Style::new().fg(Color::DarkGray)),
        Span::raw(format!(" {} ", t.id)),
        Span::styled(
            if t.requested_model.is_empty() {
                "-".to_string()
            } else {
                t.requested_model.clone()
            },
            Style::new().fg(Color::Cyan),
        ),
        Span::raw(" -> "),
        Span::raw(t.served_model.clone().unwrap_or_else(|| "none".into())),
        Span::raw(" "),
        Span::styled(t.outcome.as_str().to_string(), outcome_style(t.outcome)),
    ];
    if !t.attempts.is_empty() {
        spans.push(Span::raw(format!(" [{}]", t.attempt_chain(" > "))));
    }
    if !t.skipped.is_empty() {
        spans.push(Span::styled(
            format!(" skips={}", t.skipped.len()),
            Style::new().fg(Color::DarkGray),
        ));
    }
    if let Some(a) = &t.affinity {
        let conv = t.session.as_deref().map_or("", |s| &s[..s.len().min(8)]);
        spans.push(Span::styled(
            format!(" conv {conv} {a}"),
            Style::new().fg(Color::Magenta),
        ));
    }
    spans.push(Span::styled(
        format!(" {}", ms_text(t.wall_ms)),
        Style::new().fg(Color::DarkGray),
    ));
    Line::from(spans)
}

fn decisions(f: &mut Frame, area: Rect, board: &Board) {
    let feed = board.feed();
    let lines: Vec<Line> = if feed.is_empty() {
        vec![Line::from(Span::styled(
            if board.snapshot.server.is_some() {
                "no request yet: decisions appear here as they happen"
            } else {
                "decisions appear here while a server runs"
            },
            Style::new().fg(Color::DarkGray),
        ))]
    } else {
        feed.iter()
            .take(area.height as usize)
            .map(|d| decision_line(d))
            .collect()
    };
    let block = Block::bordered().title(" Decisions (newest first) ");
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn key_line(f: &mut Frame, area: Rect, board: &Board) {
    let line = match &board.message {
        Some(m) => Line::from(Span::styled(m.clone(), Style::new().fg(Color::Yellow))),
        None if board.editing_filter => {
            Line::from("type to filter · Enter keeps it · Esc clears it")
        }
        None => {
            let mut keys = vec![
                ("q", "quit"),
                ("?", "help"),
                ("/", "filter"),
                ("</>", "sort"),
                ("i", "invert"),
                ("r", "reset breaker"),
                ("p", "pin/unpin"),
            ];
            if board.snapshot.server.is_none() && !board.snapshot.server_recorded {
                keys.push(("s", "start server"));
            }
            let mut spans = Vec::new();
            for (k, what) in keys {
                spans.push(Span::styled(k, Style::new().bold().fg(Color::Cyan)));
                spans.push(Span::raw(format!(" {what}  ")));
            }
            Line::from(spans)
        }
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The help screen's lines.
pub(crate) fn help_lines() -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from("Keys").bold(),
        Line::from("  q, Ctrl-C      quit"),
        Line::from("  ? h F1         this help (any key closes it)"),
        Line::from("  up/down j/k    select a model; PgUp/PgDn, Home/End (g/G) jump"),
        Line::from("  < > left right sort by the previous/next column; i inverts the order"),
        Line::from("  1-9, 0         sort by that column (again: invert)"),
        Line::from("  /              filter models and decisions by text; Esc clears"),
        Line::from("  r              reset the selected model's breaker (CLOSED, pauses lifted)"),
        Line::from(format!(
            "  p              pin/unpin the selected model: pinning puts it first in set \"{PIN_SET}\""
        )),
        Line::from(format!(
            "                 (made from the active set if there is none) and makes \"{PIN_SET}\" the"
        )),
        Line::from(format!(
            "                 active set; unpinning takes it out, and an empty \"{PIN_SET}\" is removed."
        )),
        Line::from("                 config.json changes now; a running server applies it when restarted."),
        Line::from("  s              no server running: start `fcm serve --detach`"),
        Line::from(""),
        Line::from("Columns").bold(),
    ];
    for c in Column::ALL {
        lines.push(Line::from(format!("  {:<8} {}", c.title(), c.meaning())));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(
        "Decisions: time, request id, model asked -> served, outcome, [attempts], conversation.",
    ));
    lines
}

fn help(f: &mut Frame, area: Rect, _board: &Board) {
    let lines = help_lines();
    let w = area.width.saturating_sub(4).min(100);
    let h = (lines.len() as u16 + 2).min(area.height.saturating_sub(2));
    let popup = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, popup);
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" fcm top: help ")),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::top::board::tests::model;
    use crate::commands::top::board::Snapshot;
    use crate::edge::live::ServerLine;
    use crate::state::trace::{AttemptRecord, Trace};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn live_board() -> Board {
        let mut b = Board::default();
        let mut ok = model("demo/ok", Some(1), BreakerState::Closed);
        ok.status.ttft_ms_p50 = Some(42);
        ok.status.live_results = 10;
        ok.status.live_ok = 9;
        ok.status.conversations = 3;
        ok.status.evidence = Evidence::Proven;
        ok.status.evidence_from = EvidenceFrom::Live;
        let mut broken = model("demo/server_500", None, BreakerState::Open);
        broken.status.cooldown_ms_left = 29_000;
        broken.status.consecutive_failures = 3;
        let mut paused = model("budget/countdown", Some(2), BreakerState::Closed);
        paused.status.pause_ms_left = 45_000;
        paused.status.budget.requests = Some(0);
        paused.status.budget.requests_per_day = Some(12);
        let mut trace = Trace::new("fcm-1-7", "fcm", true);
        trace.outcome = Outcome::Served;
        trace.served_model = Some("demo/ok".into());
        trace.attempts = vec![
            AttemptRecord {
                model: "demo/server_500".into(),
                status: Some(500),
                kind: Some(crate::answers::classify::FailureKind::ProviderServerError),
                latency_ms: 3,
                key: None,
                raced_out: false,
            },
            AttemptRecord {
                model: "demo/ok".into(),
                status: Some(200),
                kind: None,
                latency_ms: 40,
                key: None,
                raced_out: false,
            },
        ];
        trace.affinity = Some("new".into());
        trace.session = Some("3f9a1c2e00ff".into());
        b.update(Snapshot {
            server: Some(ServerLine {
                version: "0.1.0".into(),
                address: "127.0.0.1:19280".into(),
                pid: 4242,
                uptime_secs: 65,
                in_flight: 1,
                connections: 2,
                conversations: 3,
                affinity: true,
            }),
            models: vec![ok, broken, paused],
            decisions: vec![Decision { seq: 7, trace }],
            ..Snapshot::default()
        });
        b
    }

    fn render(b: &Board, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, b)).unwrap();
        let buf = t.backend().buffer();
        let mut out = String::new();
        for y in 0..h {
            for x in 0..w {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn every_size_shows_the_key_columns_and_rows() {
        let b = live_board();
        for (w, h) in [
            (160, 48),
            (120, 40),
            (100, 30),
            (80, 24),
            (60, 15),
            (40, 10),
        ] {
            let s = render(&b, w, h);
            for want in ["demo/ok", "CLOSED", "PAUSED", "fcm top", "Decisions"] {
                assert!(s.contains(want), "{w}x{h} lacks {want:?}:\n{s}");
            }
            if h >= 15 {
                assert!(s.contains("OPEN"), "{w}x{h}: every row\n{s}");
            }
            if w >= 60 {
                assert!(s.contains("42 ms"), "{w}x{h}: TTFT\n{s}");
                assert!(s.contains("fcm-1-7"), "{w}x{h}: the decision\n{s}");
            }
            if w >= 80 {
                for want in [
                    "demo/server_500",
                    "90%",
                    "29.0 s",
                    "State",
                    "TTFT",
                    "Success",
                ] {
                    assert!(s.contains(want), "{w}x{h} lacks {want:?}:\n{s}");
                }
            }
            if w >= 120 {
                for want in ["0/12", "proven live", "Conv", "Budget", "Evidence", "Tier"] {
                    assert!(s.contains(want), "{w}x{h} lacks {want:?}:\n{s}");
                }
                assert!(s.contains("[demo/server_500:500 > demo/ok:200]"), "{s}");
                assert!(s.contains("conv 3f9a1c2e new"), "{s}");
            }
        }
    }

    #[test]
    fn every_breaker_state_and_pause_has_its_word() {
        let mut b = live_board();
        let mut degraded = model("demo/flaky", Some(3), BreakerState::Degraded);
        degraded.status.consecutive_failures = 2;
        let mut trial = model("demo/trial", None, BreakerState::HalfOpen);
        trial.status.skipped = Some(crate::state::trace::SkipReason::CircuitOpen);
        let mut overloaded = model("demo/busy", None, BreakerState::Closed);
        overloaded.status.pause_ms_left = 90_000;
        overloaded.status.paused_for = Some(FailureKind::ModelOverloaded);
        let mut snapshot = b.snapshot.clone();
        snapshot.models.extend([degraded, trial, overloaded]);
        snapshot.decisions.clear();
        b.update(snapshot);
        for (w, h) in [(160, 48), (100, 30)] {
            let s = render(&b, w, h);
            let row = |model: &str| {
                s.lines()
                    .find(|l| l.contains(model))
                    .unwrap_or_else(|| panic!("{w}x{h}: no row for {model}:\n{s}"))
            };
            for (model, want) in [
                ("demo/ok", "CLOSED"),
                ("demo/flaky", "DEGRADED"),
                ("demo/trial", "HALF_OPEN"),
                ("demo/server_500 ", "OPEN"),
                ("demo/server_500 ", "29.0 s"),
                ("budget/countdown", "PAUSED"),
                ("budget/countdown", "45.0 s quota"),
                ("demo/busy", "PAUSED"),
                ("demo/busy", "1m30s overload"),
                ("demo/trial", "circuit_open"),
            ] {
                assert!(
                    row(model).contains(want),
                    "{w}x{h}: {model} lacks {want:?}:\n{s}"
                );
            }
            assert!(
                s.contains("1 OPEN"),
                "the header counts OPEN breakers:\n{s}"
            );
        }
    }

    #[test]
    fn a_tiny_terminal_says_so() {
        let s = render(&live_board(), 30, 8);
        assert!(s.contains("too small"), "{s}");
        let s = render(&live_board(), 1, 1);
        assert_eq!(s.trim().chars().count(), 1, "one cell, no panic");
    }

    #[test]
    fn without_a_server_it_offers_to_start_one() {
        let mut b = Board {
            bench_at: Some("2025-01-02T03:04:05Z".into()),
            ..Board::default()
        };
        b.bench.insert(
            "demo/ok".into(),
            super::super::board::BenchFigures {
                success_rate: 0.75,
                ttft_ms: Some(380),
            },
        );
        b.update(Snapshot {
            models: vec![model("demo/ok", Some(1), BreakerState::Closed)],
            note: Some("no fcm serve is running".into()),
            ..Snapshot::default()
        });
        let s = render(&b, 120, 30);
        for want in [
            "no fcm serve is running",
            "press s to start fcm serve",
            "last bench 2025-01-02T03:04:05Z",
            "demo/ok",
            "s start server",
            "380 ms b",
            "75% b",
        ] {
            assert!(s.contains(want), "lacks {want:?}:\n{s}");
        }
    }

    #[test]
    fn help_covers_keys_and_columns_and_closes() {
        let mut b = live_board();
        b.help = true;
        let s = render(&b, 120, 40);
        for want in [
            "reset the selected",
            "pin/unpin",
            "restarted",
            "Columns",
            "TTFT",
        ] {
            assert!(s.contains(want), "lacks {want:?}:\n{s}");
        }
        // Smaller screens clip the help, never panic.
        for (w, h) in [(80, 24), (60, 15), (40, 10)] {
            render(&b, w, h);
        }
    }

    #[test]
    fn columns_give_way_from_the_least_needed() {
        let (all, model) = columns(200, 30);
        assert_eq!((all.len(), model), (Column::ALL.len(), 30));
        let (narrow, model) = columns(58, 30);
        assert!(narrow.contains(&Column::Model) && narrow.contains(&Column::State));
        assert!(!narrow.contains(&Column::Tier) && !narrow.contains(&Column::Evidence));
        assert!(model >= MODEL_MIN);
        let used: u16 = narrow
            .iter()
            .map(|c| {
                if *c == Column::Model {
                    model
                } else {
                    width(*c)
                }
            })
            .sum::<u16>()
            + narrow.len() as u16
            - 1;
        assert!(used <= 58, "{used}");
    }
}
