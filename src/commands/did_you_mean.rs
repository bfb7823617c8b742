//! "did you mean" for a mistyped command or flag. argh says which word it did not take;
//! this walks the same words through the command definitions (argh's `ArgsInfo`, the tree
//! `--help`, completions and the man page come from too) to find which command was being
//! given it, and names that command's closest subcommand or flag. Pure: words in, a line out.

use argh::{CommandInfoWithArgs, FlagInfoKind};

/// A line for stderr after argh's own error: the closest name to the first word the command
/// line's commands do not know, and where the full list is. `None` when every word is known
/// (argh refused the line for another reason: a missing value, a bad number).
pub(crate) fn hint(root: &CommandInfoWithArgs, args: &[&str]) -> Option<String> {
    let (path, node, unknown) = first_unknown(root, args)?;
    let at = if path.is_empty() {
        root.name.to_string()
    } else {
        format!("{} {}", root.name, path.join(" "))
    };
    if unknown.starts_with('-') {
        let flags: Vec<String> = node
            .flags
            .iter()
            .filter(|f| !f.hidden)
            .flat_map(|f| {
                let short = f.short.map(|c| format!("-{c}"));
                std::iter::once(f.long.to_string()).chain(short)
            })
            .collect();
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let close = closest(unknown, &flags);
        return Some(match close {
            Some(flag) => format!(
                "{at}: unknown option {unknown}: did you mean {flag}? (`{at} --help` lists the options)"
            ),
            None => format!("{at}: unknown option {unknown} (`{at} --help` lists the options)"),
        });
    }
    let names: Vec<&str> = node.commands.iter().map(|c| c.name).collect();
    Some(match closest(unknown, &names) {
        Some(name) => format!(
            "{at}: unknown command {unknown:?}: did you mean `{at} {name}`? (`{at} --help` lists the commands)"
        ),
        None => format!("{at}: unknown command {unknown:?} (`{at} --help` lists the commands)"),
    })
}

/// The command path before the first word no command there takes, that command's
/// definition, and the word. Option values are stepped over; `--` ends the flags.
fn first_unknown<'i, 'a>(
    root: &'i CommandInfoWithArgs,
    args: &[&'a str],
) -> Option<(Vec<&'static str>, &'i CommandInfoWithArgs, &'a str)> {
    let mut node = root;
    let mut path = Vec::new();
    let mut positionals = 0;
    let mut words = args.iter();
    let mut flags_ended = false;
    while let Some(&word) = words.next() {
        if word == "--" {
            flags_ended = true;
            continue;
        }
        if word.starts_with('-') && word.len() > 1 && !flags_ended {
            if is_help(word) {
                continue;
            }
            let flag = node
                .flags
                .iter()
                .find(|f| f.long == word || f.short.is_some_and(|c| word == format!("-{c}")));
            match flag {
                Some(f) if matches!(f.kind, FlagInfoKind::Option { .. }) => {
                    words.next();
                }
                Some(_) => {}
                None => return Some((path, node, word)),
            }
            continue;
        }
        if word == "help" {
            continue;
        }
        if let Some(sub) = node.commands.iter().find(|c| c.name == word) {
            path.push(sub.name);
            node = &sub.command;
            positionals = 0;
            continue;
        }
        // A positional argument, while the command takes more.
        let repeats = node
            .positionals
            .last()
            .is_some_and(|p| matches!(p.optionality, argh::Optionality::Repeating));
        if positionals < node.positionals.len() || repeats {
            positionals += 1;
            continue;
        }
        return Some((path, node, word));
    }
    None
}

fn is_help(word: &str) -> bool {
    matches!(word, "-h" | "--help")
}

/// The known name nearest to `given`: within a third of its length in edits (at most three;
/// a swap of two neighbours is one edit, and a word of one or two letters must be exact),
/// or one it begins. Ties go to the first in definition order.
fn closest<'n>(given: &str, known: &[&'n str]) -> Option<&'n str> {
    let bare = |s: &str| s.trim_start_matches('-').to_string();
    let g = bare(given);
    let allowed = (g.chars().count() / 3).min(3);
    let mut best: Option<(usize, &str)> = None;
    for name in known {
        let n = bare(name);
        let d = if n.starts_with(&g) && g.chars().count() >= 2 {
            1
        } else {
            edits(&g, &n)
        };
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, n)| n)
}

/// The optimal string alignment distance: insertions, deletions, substitutions, and swaps
/// of two neighbouring characters, each one edit.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::definitions;

    #[test]
    fn edit_distances() {
        let cases = [
            ("bench", "bench", 0),
            ("benhc", "bench", 1),
            ("bnch", "bench", 1),
            ("serv", "serve", 1),
            ("jsn", "json", 1),
            ("status", "stop", 4),
            ("", "top", 3),
        ];
        for (a, b, want) in cases {
            assert_eq!(edits(a, b), want, "{a} -> {b}");
        }
    }

    #[test]
    fn hints_name_the_closest_command_or_flag_of_the_command_given() {
        let info = definitions();
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["benhc"], Some("did you mean `fcm bench`?")),
            (&["stauts"], Some("did you mean `fcm status`?")),
            (
                &["instal", "claude-code"],
                Some("did you mean `fcm install`?"),
            ),
            (
                &["bench", "--jsn"],
                Some("fcm bench: unknown option --jsn: did you mean --json?"),
            ),
            (
                &["bench", "--provider", "x", "--pngs", "2"],
                Some("did you mean --pings?"),
            ),
            (&["keys", "lst"], Some("did you mean `fcm keys list`?")),
            (
                &["sets", "use", "x", "--bogus"],
                Some("fcm sets use: unknown option --bogus"),
            ),
            (&["history", "-x"], Some("fcm history: unknown option -x")),
            (
                &["zzzzzz"],
                Some("fcm: unknown command \"zzzzzz\" (`fcm --help`"),
            ),
            // Every word known: argh refused the line for another reason.
            (&["bench", "--pings"], None),
            (&["bench", "--pings", "x"], None),
        ];
        for (args, want) in cases {
            let got = hint(&info, args);
            match want {
                Some(w) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(w)),
                    "{args:?}: {got:?}"
                ),
                None => assert_eq!(got, None, "{args:?}"),
            }
        }
        let nothing_close = hint(&info, &["zzzzzz"]).unwrap();
        assert!(!nothing_close.contains("did you mean"), "{nothing_close}");
    }
}
