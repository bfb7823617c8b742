//! `fcm completions bash|zsh|fish`: a completion script for the shell, written from the
//! command definitions (argh's `ArgsInfo` tree, the one `--help` comes from), so a new
//! command or flag is completed without a change here. Each script works out which command
//! is being typed by walking the words before the cursor (stepping over an option's
//! value), then offers that command's subcommands and flags. Values are not completed
//! (the shell's file names are offered where a value goes).

use std::fmt::Write;

use anyhow::Result;
use argh::{ArgsInfo, CommandInfoWithArgs, FlagInfoKind, FromArgs};

use crate::commands::exit::ExitCode;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(
    subcommand,
    name = "completions",
    example = "source <(fcm completions bash)",
    example = "fcm completions zsh > ~/.zfunc/_fcm",
    example = "fcm completions fish > ~/.config/fish/completions/fcm.fish"
)]
/// Print a shell completion script for fcm's commands and flags (bash, zsh or fish).
pub(crate) struct CompletionsArgs {
    /// the shell: bash, zsh or fish
    #[argh(positional, from_str_fn(shell))]
    pub(crate) shell: Shell,
}

/// The shells fcm writes completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

fn shell(value: &str) -> std::result::Result<Shell, String> {
    match value {
        "bash" => Ok(Shell::Bash),
        "zsh" => Ok(Shell::Zsh),
        "fish" => Ok(Shell::Fish),
        _ => Err(format!(
            "fcm completions knows bash, zsh and fish, not {value:?}"
        )),
    }
}

pub(crate) fn run(args: CompletionsArgs, root: &CommandInfoWithArgs) -> Result<ExitCode> {
    print!("{}", script(args.shell, root));
    Ok(ExitCode::Ok)
}

/// The script for `shell`.
pub(crate) fn script(shell: Shell, root: &CommandInfoWithArgs) -> String {
    let commands = flatten(root);
    match shell {
        Shell::Bash => bash(root.name, &commands),
        Shell::Zsh => zsh(root.name, &commands),
        Shell::Fish => fish(root.name, &commands),
    }
}

/// One command of the tree: its path of subcommand names (empty for fcm itself), what may
/// follow it, and its flags that take a value (their value is stepped over).
struct Node<'i> {
    path: String,
    /// Subcommands and flags, with a one-line description.
    words: Vec<(String, String)>,
    /// Flags with a value, as typed (`--port`, `-n`).
    valued: Vec<String>,
    /// Each flag, for fish: long name, short letter, takes a value, description.
    flags: Vec<(&'i str, Option<char>, bool, String)>,
    /// Subcommands, for fish: name and description.
    subcommands: Vec<(&'i str, String)>,
}

impl Node<'_> {
    /// The command path after `word`, a subcommand of this one.
    fn child(&self, word: &str) -> String {
        if self.path.is_empty() {
            word.to_string()
        } else {
            format!("{} {word}", self.path)
        }
    }

    /// `"path:--flag"` for each flag that takes a value: the patterns a script matches to
    /// skip the value that follows.
    fn valued_patterns(&self) -> Vec<String> {
        self.valued
            .iter()
            .map(|f| format!("\"{}:{f}\"", self.path))
            .collect()
    }
}

fn flatten(root: &CommandInfoWithArgs) -> Vec<Node<'static>> {
    let mut out = Vec::new();
    walk(root, String::new(), &mut out);
    out
}

fn walk(cmd: &CommandInfoWithArgs, path: String, out: &mut Vec<Node<'static>>) {
    let mut node = Node {
        path: path.clone(),
        words: Vec::new(),
        valued: Vec::new(),
        flags: Vec::new(),
        subcommands: Vec::new(),
    };
    for sub in &cmd.commands {
        let about = first_sentence(sub.command.description);
        node.words.push((sub.name.to_string(), about.clone()));
        node.subcommands.push((sub.name, about));
    }
    for flag in cmd.flags.iter().filter(|f| !f.hidden) {
        let takes_value = matches!(flag.kind, FlagInfoKind::Option { .. });
        // Every command takes -h as well as --help (argh lists only --help).
        let short = flag.short.or((flag.long == "--help").then_some('h'));
        let about = first_sentence(flag.description);
        node.words.push((flag.long.to_string(), about.clone()));
        if let Some(c) = short {
            node.words.push((format!("-{c}"), about.clone()));
        }
        if takes_value {
            node.valued.push(flag.long.to_string());
            node.valued.extend(short.map(|c| format!("-{c}")));
        }
        let name = flag.long.trim_start_matches("--");
        node.flags.push((name, short, takes_value, about));
    }
    out.push(node);
    for sub in &cmd.commands {
        let child = if path.is_empty() {
            sub.name.to_string()
        } else {
            format!("{path} {}", sub.name)
        };
        walk(&sub.command, child, out);
    }
}

/// A description's first sentence on one line, without its final full stop.
fn first_sentence(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = one_line.find(". ").unwrap_or(one_line.len());
    one_line[..end].trim_end_matches('.').to_string()
}

/// The `case` arms shared by bash and zsh (the same syntax in both): a subcommand moves the
/// path on, a flag with a value has its value skipped.
fn walk_arms(commands: &[Node<'_>], indent: &str) -> String {
    let mut out = String::new();
    for node in commands {
        for (word, _) in node.words.iter().filter(|(w, _)| !w.starts_with('-')) {
            let next = node.child(word);
            let _ = writeln!(
                out,
                "{indent}\"{}:{word}\") cmdpath=\"{next}\" ;;",
                node.path
            );
        }
        if !node.valued.is_empty() {
            let pats = node.valued_patterns();
            let _ = writeln!(out, "{indent}{}) skip=1 ;;", pats.join(" | "));
        }
    }
    out
}

fn bash(name: &str, commands: &[Node<'_>]) -> String {
    let mut out = format!(
        "# bash completion for {name}, written by `{name} completions bash` from its command\n\
         # definitions. Load it with `source <({name} completions bash)` in ~/.bashrc, or save it\n\
         # as ~/.local/share/bash-completion/completions/{name}.\n\
         _{name}() {{\n    \
         local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" cmdpath=\"\" skip=0 word i words=\"\"\n    \
         for ((i = 1; i < COMP_CWORD; i++)); do\n        \
         word=\"${{COMP_WORDS[i]}}\"\n        \
         if [[ $skip == 1 ]]; then\n            skip=0\n            continue\n        fi\n        \
         case \"$cmdpath:$word\" in\n"
    );
    out.push_str(&walk_arms(commands, "            "));
    out.push_str(
        "        esac\n    done\n    \
         # An option's value: the shell's own completion (file names).\n    \
         [[ $skip == 1 ]] && return 0\n    \
         case \"$cmdpath\" in\n",
    );
    for node in commands {
        let words: Vec<&str> = node.words.iter().map(|(w, _)| w.as_str()).collect();
        let _ = writeln!(
            out,
            "        \"{}\") words=\"{}\" ;;",
            node.path,
            words.join(" ")
        );
    }
    let _ = write!(
        out,
        "    esac\n    \
         COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n\
         }}\n\
         complete -o default -F _{name} {name}\n"
    );
    out
}

/// `text` inside single quotes for zsh (a quote closes, is escaped, and reopens).
fn zsh_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn zsh(name: &str, commands: &[Node<'_>]) -> String {
    let mut out = format!(
        "#compdef {name}\n\
         # zsh completion for {name}, written by `{name} completions zsh` from its command\n\
         # definitions. Save it as _{name} in a folder of $fpath (e.g. ~/.zfunc, with\n\
         # `fpath+=~/.zfunc` before compinit), or `source <({name} completions zsh)` after compinit.\n\
         _{name}() {{\n    \
         local cmdpath=\"\" skip=0 word i\n    \
         local -a entries\n    \
         for ((i = 2; i < CURRENT; i++)); do\n        \
         word=${{words[i]}}\n        \
         if ((skip)); then\n            skip=0\n            continue\n        fi\n        \
         case \"$cmdpath:$word\" in\n"
    );
    out.push_str(&walk_arms(commands, "            "));
    out.push_str(
        "        esac\n    done\n    \
         if ((skip)); then\n        _files\n        return\n    fi\n    \
         case \"$cmdpath\" in\n",
    );
    for node in commands {
        let entries: Vec<String> = node
            .words
            .iter()
            .map(|(w, about)| zsh_quoted(&format!("{w}:{about}")))
            .collect();
        let _ = writeln!(
            out,
            "        \"{}\") entries=({}) ;;",
            node.path,
            entries.join(" ")
        );
    }
    let _ = write!(
        out,
        "    esac\n    \
         _describe -t {name} {name} entries\n\
         }}\n\
         if [[ $funcstack[1] == _{name} ]]; then\n    _{name} \"$@\"\nelse\n    compdef _{name} {name}\nfi\n"
    );
    out
}

/// `text` inside single quotes for fish.
fn fish_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

fn fish(name: &str, commands: &[Node<'_>]) -> String {
    let mut out = format!(
        "# fish completion for {name}, written by `{name} completions fish` from its command\n\
         # definitions. Save it as ~/.config/fish/completions/{name}.fish.\n\
         function __{name}_command\n    \
         set -l words (commandline -opc)\n    \
         set -e words[1]\n    \
         set -l cmdpath ''\n    \
         set -l skip 0\n    \
         for word in $words\n        \
         if test $skip = 1\n            set skip 0\n            continue\n        end\n        \
         switch \"$cmdpath:$word\"\n"
    );
    for node in commands {
        for (sub, _) in &node.subcommands {
            let next = node.child(sub);
            let _ = writeln!(
                out,
                "            case \"{}:{sub}\"\n                set cmdpath \"{next}\"",
                node.path
            );
        }
        if !node.valued.is_empty() {
            let pats = node.valued_patterns();
            let _ = writeln!(
                out,
                "            case {}\n                set skip 1",
                pats.join(" ")
            );
        }
    }
    let _ = writeln!(
        out,
        "        end\n    end\n    echo $cmdpath\nend\ncomplete -c {name} -f"
    );
    for node in commands {
        let when = fish_quoted(&format!("test (__{name}_command) = \"{}\"", node.path));
        for (sub, about) in &node.subcommands {
            let _ = writeln!(
                out,
                "complete -c {name} -n {when} -a {sub} -d {}",
                fish_quoted(about)
            );
        }
        for (long, short, takes_value, about) in &node.flags {
            let short = short.map_or(String::new(), |c| format!(" -s {c}"));
            let value = if *takes_value { " -r -F" } else { "" };
            let _ = writeln!(
                out,
                "complete -c {name} -n {when} -l {long}{short}{value} -d {}",
                fish_quoted(about)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::definitions;

    #[test]
    fn every_command_and_flag_of_the_definitions_is_in_each_script() {
        let info = definitions();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let s = script(shell, &info);
            for sub in &info.commands {
                assert!(s.contains(sub.name), "{shell:?} lacks {}", sub.name);
                for flag in sub.command.flags.iter().filter(|f| !f.hidden) {
                    let long = flag.long.trim_start_matches('-');
                    assert!(s.contains(long), "{shell:?} lacks {} {long}", sub.name);
                }
            }
            assert!(s.contains("keys set"), "{shell:?}: nested commands");
        }
    }

    #[test]
    fn sentences_and_quotes() {
        assert_eq!(
            first_sentence("Probe models.\nThen rank them. More."),
            "Probe models"
        );
        assert_eq!(
            first_sentence("the catalog's models"),
            "the catalog's models"
        );
        assert_eq!(zsh_quoted("it's"), r"'it'\''s'");
        assert_eq!(fish_quoted(r"it's a \ back"), r"'it\'s a \\ back'");
        assert!(shell("tcsh").unwrap_err().contains("bash, zsh and fish"));
    }
}
