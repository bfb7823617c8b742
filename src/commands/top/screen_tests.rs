//! Rendering tests of `fcm top`'s screen on a test backend, at several sizes.

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
    trace.saved_tokens = Some(1234);
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
            assert!(s.contains("-1234 tok conv 3f9a1c2e new"), "{s}");
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
