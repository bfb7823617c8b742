//! `fcm man`: the manual page (roff, section 1), written from the command definitions
//! (argh's `ArgsInfo` tree, the one `--help` comes from) and the exit-code table, so it
//! names every command and flag the binary has. `fcm man > fcm.1; man ./fcm.1` reads it;
//! the prose manual is docs/commands.md.

use std::fmt::Write;

use anyhow::Result;
use argh::{ArgsInfo, CommandInfoWithArgs, FlagInfoKind, FromArgs, Optionality};

use crate::commands::exit::ExitCode;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(
    subcommand,
    name = "man",
    example = "fcm man > ~/.local/share/man/man1/fcm.1",
    example = "fcm man | man -l -"
)]
/// Print fcm's manual page (roff) on stdout.
pub(crate) struct ManArgs {}

pub(crate) fn run(_args: ManArgs, root: &CommandInfoWithArgs) -> Result<ExitCode> {
    print!("{}", page(root));
    Ok(ExitCode::Ok)
}

/// What fcm is, for the page's description (the definitions' own is one line).
const DESCRIPTION: &str = "fcm asks the free coding models of many providers a real question, \
    ranks those that really answer (fcm bench), and serves a local proxy (fcm serve) that coding \
    tools use as their model: it picks the strongest model that works now, fails over when one \
    breaks, and never passes off a broken answer as a good one. A run without keys or network: \
    fcm demo.";

/// The variables the page names: where fcm keeps its state and what changes it
/// (docs/configuration.md has the rest).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "FCM_HOME",
        "the folder of config.json and the state files (default: the platform's config folder + /fcm, e.g. ~/.config/fcm)",
    ),
    (
        "FCM_CATALOG",
        "a providers.json to use instead of the catalog built into the binary",
    ),
    (
        "FCM_TOKEN",
        "the access token fcm serve wants, and commands send to it",
    ),
];

/// The whole page.
pub(crate) fn page(root: &CommandInfoWithArgs) -> String {
    let name = root.name;
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".TH {} 1 \"\" \"{name} {}\" \"User Commands\"",
        name.to_uppercase(),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        out,
        ".SH NAME\n{name} \\- {}",
        text(env!("CARGO_PKG_DESCRIPTION"))
    );
    let _ = writeln!(
        out,
        ".SH SYNOPSIS\n.B {name}\n\\fIcommand\\fR [\\fIoptions\\fR]\n.br\n.B {name}\n[\\fB\\-h\\fR | \\fB\\-V\\fR | \\fB\\-v\\fR]"
    );
    let _ = writeln!(out, ".SH DESCRIPTION\n{}", text(DESCRIPTION));
    out.push_str(".SH OPTIONS\n");
    flags(&mut out, root);
    out.push_str(".SH COMMANDS\n");
    for sub in &root.commands {
        command(&mut out, name, sub.name, &sub.command);
    }
    out.push_str(".SH EXIT STATUS\n");
    for code in ExitCode::ALL {
        let _ = writeln!(out, ".TP\n.B {}\n{}", code.code(), text(code.description()));
    }
    out.push_str(".SH ENVIRONMENT\n");
    for (var, what) in ENVIRONMENT {
        let _ = writeln!(out, ".TP\n.B {var}\n{}", text(what));
    }
    let _ = writeln!(
        out,
        ".SH SEE ALSO\nThe manual in the source repository: README.md, docs/commands.md (every \
         command with examples), docs/configuration.md and docs/routing.md.\n.PP\n\
         \\fB{name} completions\\fR writes shell completions."
    );
    out
}

/// One command, then its subcommands, each under its full name (`fcm keys set`).
fn command(out: &mut String, parent: &str, name: &str, cmd: &CommandInfoWithArgs) {
    let full = format!("{parent} {name}");
    let mut usage = format!("\\fB{}\\fR", text(&full));
    for f in cmd.flags.iter().filter(|f| !f.hidden && f.long != "--help") {
        let flag = flag_name(f.long, f.short);
        let value = match f.kind {
            FlagInfoKind::Option { arg_name } => format!(" \\fI{}\\fR", text(arg_name)),
            FlagInfoKind::Switch => String::new(),
        };
        let _ = match f.optionality {
            Optionality::Required => write!(usage, " {flag}{value}"),
            Optionality::Repeating => write!(usage, " [{flag}{value}...]"),
            _ => write!(usage, " [{flag}{value}]"),
        };
    }
    for p in cmd.positionals.iter().filter(|p| !p.hidden) {
        let _ = match p.optionality {
            Optionality::Required => write!(usage, " \\fI{}\\fR", text(p.name)),
            Optionality::Repeating | Optionality::Greedy => {
                write!(usage, " [\\fI{}\\fR...]", text(p.name))
            }
            Optionality::Optional => write!(usage, " [\\fI{}\\fR]", text(p.name)),
        };
    }
    if !cmd.commands.is_empty() {
        usage.push_str(" \\fIcommand\\fR");
    }
    let _ = writeln!(
        out,
        ".SS \"{}\"\n{usage}\n.PP\n{}",
        text(&full),
        text(cmd.description)
    );
    for note in cmd.notes {
        let _ = writeln!(out, ".PP\n{}", text(&note.replace("{command_name}", &full)));
    }
    for p in cmd.positionals.iter().filter(|p| !p.hidden) {
        let _ = writeln!(
            out,
            ".TP\n\\fI{}\\fR\n{}",
            text(p.name),
            text(p.description)
        );
    }
    flags(out, cmd);
    for e in cmd.error_codes {
        let _ = writeln!(out, ".TP\nexit \\fB{}\\fR\n{}", e.code, text(e.description));
    }
    for example in cmd.examples {
        let _ = writeln!(
            out,
            ".PP\nExample:\n.RS\n.nf\n{}\n.fi\n.RE",
            text(&example.replace("{command_name}", &full))
        );
    }
    for sub in &cmd.commands {
        command(out, &full, sub.name, &sub.command);
    }
}

/// The flags of a command, one tagged paragraph each (`-h` beside `--help`).
fn flags(out: &mut String, cmd: &CommandInfoWithArgs) {
    for f in cmd.flags.iter().filter(|f| !f.hidden) {
        let short = f.short.or((f.long == "--help").then_some('h'));
        let value = match f.kind {
            FlagInfoKind::Option { arg_name } => format!(" \\fI{}\\fR", text(arg_name)),
            FlagInfoKind::Switch => String::new(),
        };
        let _ = writeln!(
            out,
            ".TP\n{}{value}\n{}",
            flag_name(f.long, short),
            text(f.description)
        );
    }
}

/// `\fB-n\fR, \fB--count\fR` with roff's minus signs.
fn flag_name(long: &str, short: Option<char>) -> String {
    let long = format!("\\fB{}\\fR", long.replace('-', "\\-"));
    match short {
        Some(c) => format!("\\fB\\-{c}\\fR, {long}"),
        None => long,
    }
}

/// Prose for roff: backslashes escaped, whitespace folded, and no line starting with a
/// control character.
fn text(s: &str) -> String {
    let folded = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let escaped = folded.replace('\\', "\\e");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::definitions;

    #[test]
    fn the_page_has_every_command_and_flag() {
        let info = definitions();
        let p = page(&info);
        assert!(p.starts_with(".TH FCM 1 "), "{p}");
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "COMMANDS",
            "EXIT STATUS",
        ] {
            assert!(p.contains(&format!(".SH {section}\n")), "{section}");
        }
        for sub in &info.commands {
            assert!(
                p.contains(&format!(".SS \"fcm {}\"", sub.name)),
                "{}",
                sub.name
            );
        }
        assert!(p.contains(".SS \"fcm keys set\""));
        assert!(p.contains("\\fB\\-\\-pings\\fR"), "bench's flags");
        assert!(p.contains(".B 130\n"), "the exit codes");
        assert!(
            !p.lines().any(|l| l.starts_with('.') && l.contains("\\.")),
            "no stray escapes"
        );
    }

    #[test]
    fn prose_is_safe_for_roff() {
        assert_eq!(text(".hidden"), "\\&.hidden");
        assert_eq!(text("a\\b\n  c"), "a\\eb c");
        assert_eq!(
            flag_name("--max-in-flight", None),
            "\\fB\\-\\-max\\-in\\-flight\\fR"
        );
        assert_eq!(
            flag_name("--count", Some('n')),
            "\\fB\\-n\\fR, \\fB\\-\\-count\\fR"
        );
    }
}
