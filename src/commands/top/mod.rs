//! `fcm top`: a full-screen live view of the running server. The pieces: `feed` (a thread
//! polling the server, or reading the files when none runs), `board` (what is shown and
//! what a key does), `screen` (drawing a board, pure), `actions` (reset, pin, start). This
//! file is the thin terminal loop: raw mode and the alternate screen on, keys and resizes
//! in, frames out, and the terminal restored on every way out: `q`, Ctrl-C, SIGINT or
//! SIGTERM, an error, and a panic (ratatui's hook restores it before the message).

mod actions;
mod board;
mod feed;
mod screen;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};
use crossterm::event::{self, Event};

use crate::commands::exit::ExitCode;
use crate::commands::{usage, Setup};
use board::{Action, Board};
use feed::{Feed, Update};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "top")]
/// Full-screen live view of the running server: every model's breaker, evidence, time to
/// first token, success rate, budget and conversations, and decisions as they happen.
/// Without a server: the catalog and the last bench, and `s` starts one. `?` lists the keys.
pub(crate) struct TopArgs {
    /// refresh period in milliseconds (default 1000, at least 200)
    #[argh(option, default = "1000")]
    pub(crate) interval: u64,
}

/// How long a wait for a key lasts before the loop looks at the feed again.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn run(args: TopArgs) -> Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return usage(
            "fcm top needs a terminal; scripts read `fcm status --json`, `fcm breakers --json` or GET /metrics",
        );
    }
    // Before the screen is taken: config warnings go to stderr.
    let setup = Arc::new(Setup::load()?);
    crate::edge::signals::install();
    let feed = Feed::start(setup.clone(), Duration::from_millis(args.interval.max(200)));
    let mut terminal = ratatui::try_init().context("cannot take over the terminal")?;
    let restore = Restore;
    let result = run_loop(&mut terminal, &feed, &setup);
    drop(restore);
    result.map(|()| ExitCode::Ok)
}

/// Leaves raw mode and the alternate screen, and shows the cursor, when dropped: on `q`,
/// on an error's way out, and while a panic unwinds.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
        let _ = crossterm::execute!(std::io::stdout(), crossterm::cursor::Show);
    }
}

fn run_loop(
    terminal: &mut ratatui::DefaultTerminal,
    feed: &Feed,
    setup: &Arc<Setup>,
) -> Result<()> {
    let mut board = Board::default();
    let mut redraw = true;
    loop {
        if crate::edge::signals::stop_requested() {
            return Ok(());
        }
        while let Ok(update) = feed.updates.try_recv() {
            match update {
                Update::Snapshot(s) => board.update(*s),
                Update::Bench(figures, at) => {
                    board.bench = figures;
                    board.bench_at = at;
                }
                Update::Pins(pins) => board.pins = pins,
                Update::Message(m) => board.message = Some(m),
            }
            redraw = true;
        }
        if redraw {
            terminal.draw(|f| screen::draw(f, &board))?;
            redraw = false;
        }
        if !event::poll(TICK)? {
            continue;
        }
        match event::read()? {
            Event::Key(key) => {
                let page = (terminal.size()?.height / 2) as usize;
                match board.key(key, page) {
                    Action::None => {}
                    Action::Quit => return Ok(()),
                    Action::Reset(model) => {
                        board.message = Some(
                            actions::reset(setup, &model).unwrap_or_else(|e| format!("{e:#}")),
                        );
                        feed.poke();
                    }
                    Action::TogglePin(model) => {
                        let running = board.snapshot.server.is_some();
                        board.message = Some(
                            actions::toggle_pin(&model, running)
                                .unwrap_or_else(|e| format!("{e:#}")),
                        );
                        feed.poke();
                    }
                    Action::StartServer => {
                        board.message = Some("starting fcm serve in the background...".into());
                        let sender = feed.sender.clone();
                        std::thread::spawn(move || {
                            let _ = sender.send(Update::Message(actions::start_server()));
                        });
                    }
                }
                redraw = true;
            }
            // The next frame is drawn at the new size (ratatui resizes its buffers).
            Event::Resize(..) => redraw = true,
            _ => {}
        }
    }
}
