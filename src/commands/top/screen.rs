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
            Some(FailureKind::QuotaExhausted) => "exhausted",
            Some(FailureKind::NetworkError) => "down",
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
    if let Some(n) = t.saved_tokens.filter(|n| *n > 0) {
        // What tool-result compression took out of this request.
        spans.push(Span::styled(
            format!(" -{n} tok"),
            Style::new().fg(Color::Green),
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
#[path = "screen_tests.rs"]
mod tests;
