//! What produced a tool result, told from its call: a file's contents (never changed), a
//! shell command's terminal output, or anything else. A result whose call is unknown is
//! "anything else".
//!
//! Agents read files through read tools (Claude Code's `Read`, Cline's `read_files`) and
//! through the shell (Codex has no read tool: it runs `sed -n`, `cat`, `nl`), and they
//! edit by matching the text they read exactly. So a shell command whose pipeline starts
//! with a program that prints files (`cat`, `sed`, `head`, `git show`, ...) counts as a
//! file read, whatever follows it; `cargo test | tail -50` is terminal output, since
//! `tail` only filters it.

/// Where a tool result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A file's contents, or a tool that edits or writes files and echoes them: left
    /// exactly as it is.
    File,
    /// A shell command's output.
    Terminal,
    /// Anything else: a search, a web page, a sub-agent, an MCP tool.
    Other,
}

/// Tools that run shell commands, by their exact names in Claude Code, Codex, Cline and
/// other agents (lower case).
const SHELL_TOOLS: [&str; 13] = [
    "bash",
    "bashoutput",
    "shell",
    "local_shell",
    "exec_command",
    "write_stdin",
    "run_commands",
    "execute_command",
    "run_command",
    "run_terminal_cmd",
    "run_in_terminal",
    "terminal",
    "container.exec",
];

/// Words in a tool's name that mean it reads, edits or writes files: its output may be a
/// file's lines, which an edit must match.
const FILE_WORDS: [&str; 9] = [
    "read", "view", "file", "open", "edit", "write", "patch", "notebook", "cat",
];

/// Words in a tool's name that mean it runs commands.
const SHELL_WORDS: [&str; 5] = ["bash", "shell", "exec", "command", "terminal"];

/// Programs that print files. A pipeline starting with one of them prints a file's lines.
const FILE_PRINTERS: [&str; 20] = [
    "cat",
    "tac",
    "nl",
    "head",
    "tail",
    "sed",
    "awk",
    "gawk",
    "less",
    "more",
    "bat",
    "batcat",
    "view",
    "xxd",
    "od",
    "hexdump",
    "diff",
    "type",
    "get-content",
    "gc",
];

/// `git` subcommands that print files or patches of them.
const GIT_FILE_PRINTERS: [&str; 5] = ["show", "diff", "cat-file", "blame", "format-patch"];

/// The source of a result of tool `name` called with `arguments` (its JSON text): a shell
/// tool's by its command ([`of_command`]), any other's by its name ([`of_tool`]).
pub fn of_call(name: &str, arguments: &str) -> Source {
    match of_tool(name) {
        Source::Terminal => match command_of(arguments) {
            Some(cmd) => of_command(&cmd),
            None => Source::Terminal,
        },
        other => other,
    }
}

/// What a tool is by its name: a shell ([`Source::Terminal`]), a tool that reads, edits or
/// writes files ([`Source::File`]), or another.
pub fn of_tool(name: &str) -> Source {
    let lower = name.to_ascii_lowercase();
    let file_word = FILE_WORDS.iter().any(|w| lower.contains(w));
    if SHELL_TOOLS.contains(&lower.as_str())
        || (!file_word && SHELL_WORDS.iter().any(|w| lower.contains(w)))
    {
        Source::Terminal
    } else if file_word {
        Source::File
    } else {
        Source::Other
    }
}

/// The command a shell tool's arguments run: `command` (Claude Code), `cmd` (Codex),
/// `commands` (Cline, joined), or an argv such as `["bash", "-lc", "..."]`.
pub fn command_of(arguments: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let v = ["command", "cmd", "commands", "script"]
        .iter()
        .find_map(|k| args.get(*k))?;
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => {
            let words: Vec<&str> = parts.iter().filter_map(|p| p.as_str()).collect();
            let shell = words
                .first()
                .is_some_and(|w| matches!(program(w), "bash" | "sh" | "zsh" | "dash"));
            if shell && words.len() >= 3 && words[1].starts_with('-') {
                // An argv running a shell script: the script is the command.
                Some(words[words.len() - 1].to_string())
            } else if args.get("commands").is_some() {
                Some(words.join("; "))
            } else {
                Some(words.join(" "))
            }
        }
        _ => None,
    }
}

/// Whether `command` prints a file (a pipeline that starts with a file printer) or is
/// terminal output.
pub fn of_command(command: &str) -> Source {
    for (words, piped) in segments(command) {
        if !piped && prints_files(&words) {
            return Source::File;
        }
    }
    Source::Terminal
}

/// Whether a command's words (the first pipeline stage) print files.
fn prints_files(words: &[String]) -> bool {
    let mut rest = words
        .iter()
        .map(String::as_str)
        // Environment assignments and wrappers before the program itself.
        .skip_while(|w| {
            is_assignment(w)
                || matches!(
                    *w,
                    "sudo" | "command" | "time" | "nice" | "env" | "exec" | "builtin"
                )
        });
    let Some(first) = rest.next() else {
        return false;
    };
    let prog = program(first).to_ascii_lowercase();
    if FILE_PRINTERS.contains(&prog.as_str()) {
        return true;
    }
    if prog == "git" {
        return rest.any(|w| GIT_FILE_PRINTERS.contains(&w) || w == "-p" || w == "--patch");
    }
    false
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// A path's last part (`/usr/bin/cat` is `cat`).
fn program(word: &str) -> &str {
    word.rsplit(['/', '\\']).next().unwrap_or(word)
}

/// The simple commands of a shell line, as words, each with whether it reads a pipe
/// (follows `|`). Quotes keep their contents in one word; `&&`, `||`, `;`, `&`, newlines
/// and `|` separate commands; `(` and `)` are dropped. Not a shell parser: enough to find
/// the programs a line runs.
fn segments(command: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut piped = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let end_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\' && q == '"' {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            } else {
                word.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '\\' => {
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        word.push(n);
                    }
                }
            }
            ' ' | '\t' | '(' | ')' | '{' | '}' => end_word(&mut word, &mut words),
            '|' | '&' | ';' | '\n' => {
                end_word(&mut word, &mut words);
                let pipe = c == '|' && chars.peek() != Some(&'|');
                if matches!(c, '|' | '&') && chars.peek() == Some(&c) {
                    chars.next();
                }
                if !words.is_empty() {
                    out.push((std::mem::take(&mut words), piped));
                }
                piped = pipe;
            }
            _ => word.push(c),
        }
    }
    end_word(&mut word, &mut words);
    if !words.is_empty() {
        out.push((words, piped));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_by_name() {
        let cases = [
            ("Read", "{}", Source::File),
            ("read_files", "{}", Source::File),
            ("NotebookRead", "{}", Source::File),
            ("Edit", "{}", Source::File),
            ("str_replace_based_edit_tool", "{}", Source::File),
            ("editor", "{}", Source::File),
            ("Grep", "{}", Source::Other),
            ("WebFetch", "{}", Source::Other),
            ("mcp__github__search", "{}", Source::Other),
            ("Bash", r#"{"command":"cargo build"}"#, Source::Terminal),
            ("Bash", r#"{"command":"cat src/main.rs"}"#, Source::File),
            (
                "exec_command",
                r#"{"cmd":"sed -n '1,200p' src/lib.rs"}"#,
                Source::File,
            ),
            ("exec_command", r#"{"cmd":"npm install"}"#, Source::Terminal),
            (
                "write_stdin",
                r#"{"session_id":3,"chars":""}"#,
                Source::Terminal,
            ),
            (
                "run_commands",
                r#"{"commands":["ls","cat a.txt"]}"#,
                Source::File,
            ),
            (
                "run_commands",
                r#"{"commands":["pytest -v"]}"#,
                Source::Terminal,
            ),
            (
                "shell",
                r#"{"command":["bash","-lc","nl -ba x.py"]}"#,
                Source::File,
            ),
            ("shell", r#"{"command":["cargo","test"]}"#, Source::Terminal),
            ("BashOutput", r#"{"bash_id":"1"}"#, Source::Terminal),
            ("my_exec_tool", "{}", Source::Terminal),
        ];
        for (name, args, want) in cases {
            assert_eq!(of_call(name, args), want, "{name} {args}");
        }
    }

    #[test]
    fn commands_that_print_files() {
        let files = [
            "cat src/main.rs",
            "cd /repo && sed -n '1,80p' src/lib.rs",
            "nl -ba src/x.rs | sed -n '10,40p'",
            "head -n 50 README.md",
            "LC_ALL=C cat -A notes.txt",
            "/bin/cat a",
            "git show HEAD:src/main.rs",
            "git --no-pager diff",
            "git log -p -3",
            "ls; cat a.txt",
            "(cd x && cat y)",
        ];
        for c in files {
            assert_eq!(of_command(c), Source::File, "{c}");
        }
        let terminal = [
            "cargo build",
            "cargo test 2>&1 | tail -n 50",
            "npm install && npm test | head -100",
            "echo 'cat a' ",
            "grep -rn \"sed\" src",
            "git log --oneline -20",
            "git status",
            "pytest -v || true",
            "ls -laR",
        ];
        for c in terminal {
            assert_eq!(of_command(c), Source::Terminal, "{c}");
        }
    }
}
