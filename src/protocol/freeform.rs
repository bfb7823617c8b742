//! Codex's freeform tools for chat models, and the way their calls go back to Codex.
//!
//! A Responses `custom` tool (its input a grammar or plain text, such as Codex's
//! `apply_patch`) has no chat form: it is offered as a function with one string argument,
//! `input`, and the model's call of it goes back as a `custom_tool_call` whose `input` is
//! that string, which is what Codex runs. Codex may carry its tools in `additional_tools`
//! input items rather than in `tools`; both are read.
//!
//! When Codex's instructions tell the model to edit files with `apply_patch` but offer no
//! such tool (it does so for model names it does not know, `fcm` among them), fcm offers
//! `apply_patch` itself and hands its call back as the shell command Codex runs patches
//! with: `apply_patch` and the patch, through `exec_command`, `shell` or `shell_command`,
//! whichever Codex offered. In code mode (one `exec` tool that runs JavaScript), the tools
//! `exec` declares are offered as functions and called through it (see `code_mode`). A call
//! of a tool Codex offered in a namespace goes back with that namespace. Pure: values in,
//! values out. Does not check calls (the gate does) and does not stream (the translators do).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::code_mode::{self, Nested};
use super::one_string::{arguments_of, function, input_of, INPUT};
use crate::answers::path::Lookup;

/// The name of Codex's patch tool.
const APPLY_PATCH: &str = "apply_patch";

/// How Codex runs the call of a tool the model was offered as a chat function.
#[derive(Debug, Clone, PartialEq)]
enum Form {
    /// A `custom` tool: a `custom_tool_call` with the `input` string.
    Custom,
    /// fcm's own `apply_patch`, run through one of Codex's shell tools.
    Patch(Shell),
    /// A tool declared inside code mode's `exec`: a script for `exec` that calls it.
    Nested(Nested),
}

/// Codex's shell tools, each with its own argument shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shell {
    /// `{"cmd": "..."}`: one command line.
    Exec,
    /// `{"command": "..."}`: one command line.
    Line,
    /// `{"command": ["apply_patch", "..."]}`: argv.
    Argv,
}

/// The tools of a Responses request that are not plain functions, by the chat name the model
/// sees. Empty for a request with only function tools: every call goes back as it came.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ClientTools {
    forms: HashMap<String, Form>,
    /// The namespace each namespaced tool was offered in, by name.
    namespaces: HashMap<String, String>,
    /// The chat functions fcm offers besides the client's own.
    added: Vec<Value>,
}

/// Every tool a Responses request offers: its `tools` and those of its `additional_tools`
/// input items, namespaces left as they are.
pub(crate) fn declared(request: &Value) -> Vec<&Value> {
    let mut out: Vec<&Value> = request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for item in request
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if item.get("type").and_then(Value::as_str) == Some("additional_tools") {
            out.extend(
                item.get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
        }
    }
    out
}

/// A function or custom tool as offered: its type, its name, the namespace it came in.
struct Listed<'a> {
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
    tool: &'a Value,
}

/// The function and custom tools, namespaces flattened.
fn listed<'a>(tools: &[&'a Value], namespace: Option<&'a str>, out: &mut Vec<Listed<'a>>) {
    for t in tools {
        let kind = t.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "namespace" {
            let inner: Vec<&Value> = t
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            listed(&inner, t.get("name").and_then(Value::as_str), out);
        } else if let Some(name) = t.get("name").and_then(Value::as_str) {
            out.push(Listed {
                kind,
                name,
                namespace,
                tool: t,
            });
        }
    }
}

/// Whether the request's instructions (or its developer and system messages) name
/// `apply_patch`.
fn instructions_name_patch(request: &Value) -> bool {
    let said = |v: &Value| v.to_string().contains(APPLY_PATCH);
    if request.get("instructions").is_some_and(said) {
        return true;
    }
    request
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| {
            matches!(
                i.get("role").and_then(Value::as_str),
                Some("developer" | "system")
            )
        })
        .any(|i| i.get("content").is_some_and(said))
}

impl ClientTools {
    /// Reads a Responses request's tools and instructions.
    pub(crate) fn of(request: &Value) -> ClientTools {
        let mut offered = Vec::new();
        listed(&declared(request), None, &mut offered);
        let mut forms: HashMap<String, Form> = offered
            .iter()
            .filter(|t| t.kind == "custom")
            .map(|t| (t.name.to_string(), Form::Custom))
            .collect();
        let namespaces = offered
            .iter()
            .filter_map(|t| Some((t.name.to_string(), t.namespace?.to_string())))
            .collect();
        let mut added = Vec::new();
        // Code mode: the tools `exec` declares, unless one of that name is offered itself.
        if let Some(exec) = offered
            .iter()
            .find(|t| t.kind == "custom" && t.name == code_mode::EXEC)
        {
            let description = exec.tool.get("description").and_then(Value::as_str);
            for tool in code_mode::nested(description.unwrap_or("")) {
                if !offered.iter().any(|t| t.name == tool.name) {
                    added.push(tool.function.clone());
                    forms.insert(tool.name.clone(), Form::Nested(tool));
                }
            }
        }
        let offers_patch =
            forms.contains_key(APPLY_PATCH) || offered.iter().any(|t| t.name == APPLY_PATCH);
        if !offers_patch && instructions_name_patch(request) {
            let shell = offered.iter().find_map(|t| match (t.kind, t.name) {
                ("function", "exec_command") => Some(Shell::Exec),
                ("function", "shell_command") => Some(Shell::Line),
                ("function", "shell") => Some(Shell::Argv),
                _ => None,
            });
            if let Some(shell) = shell {
                forms.insert(APPLY_PATCH.to_string(), Form::Patch(shell));
                added.push(function(
                    APPLY_PATCH,
                    "Edits files. The input is a patch: `*** Begin Patch`, then for each file \
                     `*** Add File: path` (every line `+`), `*** Delete File: path` or \
                     `*** Update File: path` followed by `@@` hunks of context lines (` `), \
                     removed lines (`-`) and added lines (`+`), then `*** End Patch`.",
                ));
            }
        }
        ClientTools {
            forms,
            namespaces,
            added,
        }
    }

    /// The chat tools fcm adds to those the client offered: `apply_patch` when bridged, the
    /// tools code mode's `exec` declares (in the order it declares them).
    pub(crate) fn added(&self) -> &[Value] {
        &self.added
    }

    /// The call a `custom_tool_call` of the history stands for, as the model made it: a
    /// script fcm wrote for code mode's `exec` is read back into the nested tool's call.
    pub(crate) fn history_call(name: &str, input: &str) -> (String, String) {
        if name == code_mode::EXEC {
            if let Some(call) = code_mode::unscript(input) {
                return call;
            }
        }
        (name.to_string(), arguments_of(input))
    }

    /// The output item for a model's call of `name`, in the form Codex runs: a
    /// `custom_tool_call` for a custom tool, a shell call for a bridged `apply_patch`, else
    /// the `function_call` it is.
    pub(crate) fn item(&self, id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
        let custom = |name: &str, input: String| {
            let mut item = json!({"type": "custom_tool_call", "id": id, "call_id": call_id,
                "name": name, "input": input, "status": "completed"});
            self.place(&mut item, name);
            item
        };
        match self.forms.get(name) {
            Some(Form::Custom) => custom(name, input_of(arguments)),
            Some(Form::Nested(tool)) => custom(code_mode::EXEC, code_mode::script(tool, arguments)),
            Some(Form::Patch(shell)) => {
                let patch = input_of(arguments);
                let (tool, args) = match shell {
                    Shell::Exec => ("exec_command", json!({"cmd": heredoc(&patch)})),
                    Shell::Line => ("shell_command", json!({"command": heredoc(&patch)})),
                    Shell::Argv => ("shell", json!({"command": [APPLY_PATCH, patch]})),
                };
                let mut item = function_call(id, call_id, tool, &args.to_string());
                self.place(&mut item, tool);
                item
            }
            None => {
                let mut item = function_call(id, call_id, name, arguments);
                self.place(&mut item, name);
                item
            }
        }
    }

    /// Adds the namespace `name` was offered in to its call.
    fn place(&self, item: &mut Value, name: &str) {
        if let Some(namespace) = self.namespaces.get(name) {
            item["namespace"] = json!(namespace);
        }
    }
}

/// A finished `function_call` output item.
fn function_call(id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
           "arguments": arguments, "status": "completed"})
}

/// A `custom` tool as a chat function: its description, then what its input must be.
pub(crate) fn custom_as_function(tool: &Value) -> Option<Value> {
    let name = tool.get("name").and_then(Value::as_str)?;
    let mut description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let format = tool.get("format").unwrap_or(&Value::Null);
    match format.at("/type").and_then(Value::as_str) {
        Some("grammar") => {
            let syntax = format
                .at("/syntax")
                .and_then(Value::as_str)
                .unwrap_or("lark");
            let definition = format
                .at("/definition")
                .and_then(Value::as_str)
                .unwrap_or("");
            description.push_str(&format!(
                "\n\nPass the whole input as the string `{INPUT}`. It must match this {syntax} grammar:\n{definition}"
            ));
        }
        _ => description.push_str(&format!(
            "\n\nPass the whole input as the string `{INPUT}` (plain text, not JSON)."
        )),
    }
    Some(function(name, &description))
}

/// `apply_patch` with the patch as a quoted here-document: Codex recognises this command
/// and applies the patch itself.
fn heredoc(patch: &str) -> String {
    let patch = patch.trim_end_matches('\n');
    let mut end = "EOF".to_string();
    while patch.lines().any(|l| l == end) {
        end.push('_');
    }
    format!("{APPLY_PATCH} <<'{end}'\n{patch}\n{end}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAMMAR: &str = "start: begin_patch hunk+ end_patch";

    fn codex(tools: Value, extra: Value, instructions: &str) -> Value {
        json!({"model": "fcm", "tools": tools, "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": instructions}]},
            extra,
            {"type": "message", "role": "user", "content": "edit it"},
        ]})
    }

    fn exec() -> Value {
        json!({"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}})
    }

    #[test]
    fn custom_tools_become_one_string_functions() {
        let t = json!({"type": "custom", "name": "apply_patch", "description": "Edit files.",
                       "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR}});
        let f = custom_as_function(&t).unwrap();
        assert_eq!(f["function"]["name"], "apply_patch");
        assert_eq!(f["function"]["parameters"]["required"], json!(["input"]));
        let d = f["function"]["description"].as_str().unwrap();
        assert!(d.starts_with("Edit files.") && d.contains("lark grammar") && d.contains(GRAMMAR));
        let plain = custom_as_function(
            &json!({"type": "custom", "name": "note", "format": {"type": "text"}}),
        )
        .unwrap();
        assert!(plain["function"]["description"]
            .as_str()
            .unwrap()
            .contains("plain text"));
    }

    #[test]
    fn call_inputs_are_read_leniently() {
        for (args, want) in [
            (r#"{"input":"*** Begin Patch"}"#, "*** Begin Patch"),
            (r#"{"patch":"*** Begin Patch"}"#, "*** Begin Patch"),
            ("*** Begin Patch", "*** Begin Patch"),
            (r#"{"input":7}"#, "7"),
        ] {
            assert_eq!(input_of(args), want, "{args}");
        }
        assert_eq!(input_of(&arguments_of("a\n\"b\"")), "a\n\"b\"");
    }

    #[test]
    fn which_tools_go_back_in_which_form() {
        let custom = json!({"type": "custom", "name": "apply_patch", "format": {"type": "text"}});
        let cases = [
            // A custom tool in `tools`, and one in an `additional_tools` item.
            (
                codex(
                    json!([custom.clone()]),
                    json!({"type": "message", "role": "user", "content": "x"}),
                    "use apply_patch",
                ),
                "custom_tool_call",
                "",
            ),
            (
                codex(
                    json!([]),
                    json!({"type": "additional_tools", "tools": [custom, exec()]}),
                    "use apply_patch",
                ),
                "custom_tool_call",
                "",
            ),
            // No apply_patch offered, the instructions name it: bridged through exec_command.
            (
                codex(
                    json!([exec()]),
                    json!({"type": "message", "role": "user", "content": "x"}),
                    "use apply_patch",
                ),
                "function_call",
                "exec_command",
            ),
            (
                codex(
                    json!([{"type": "function", "name": "shell"}]),
                    json!({"type": "message", "role": "user", "content": "x"}),
                    "use apply_patch",
                ),
                "function_call",
                "shell",
            ),
        ];
        for (request, kind, tool) in cases {
            let tools = ClientTools::of(&request);
            let item = tools.item(
                "fc_1",
                "call_1",
                "apply_patch",
                r#"{"input":"*** Begin Patch\n*** End Patch\n"}"#,
            );
            assert_eq!(item["type"], kind, "{request}");
            assert_eq!(item["call_id"], "call_1");
            if kind == "custom_tool_call" {
                assert_eq!(item["input"], "*** Begin Patch\n*** End Patch\n");
                assert!(tools.added().is_empty());
            } else {
                assert_eq!(item["name"], tool);
                assert!(!tools.added().is_empty());
            }
        }
        let args = ClientTools::of(&codex(
            json!([exec()]),
            json!({"role": "user", "content": "x"}),
            "apply_patch",
        ))
        .item(
            "fc",
            "c",
            "apply_patch",
            r#"{"input":"*** Begin Patch\nEOF\n*** End Patch"}"#,
        )["arguments"]
            .as_str()
            .map(|a| serde_json::from_str::<Value>(a).unwrap())
            .unwrap();
        assert_eq!(
            args["cmd"],
            "apply_patch <<'EOF_'\n*** Begin Patch\nEOF\n*** End Patch\nEOF_\n"
        );
        let argv = ClientTools::of(&codex(
            json!([{"type": "function", "name": "shell"}]),
            json!({"role": "user", "content": "x"}),
            "apply_patch",
        ))
        .item("fc", "c", "apply_patch", r#"{"input":"P"}"#);
        assert_eq!(
            argv["arguments"],
            json!({"command": ["apply_patch", "P"]}).to_string()
        );
    }

    #[test]
    fn no_bridge_without_the_instructions_or_a_shell() {
        let plain = json!({"role": "user", "content": "x"});
        for request in [
            codex(json!([exec()]), plain.clone(), "be brief"),
            codex(json!([]), plain.clone(), "use apply_patch"),
            codex(
                json!([exec(), {"type": "function", "name": "apply_patch"}]),
                plain.clone(),
                "use apply_patch",
            ),
        ] {
            let tools = ClientTools::of(&request);
            assert!(tools.added().is_empty(), "{request}");
            assert_eq!(
                tools.item("fc", "c", "apply_patch", "{}")["type"],
                "function_call"
            );
        }
    }
}
