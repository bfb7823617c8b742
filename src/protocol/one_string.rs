//! A freeform tool's input as a chat function's one string argument, `input`: the function
//! offered for such a tool, and the input read back out of a model's call. Shared by Codex's
//! custom tools (`freeform`) and code mode's string tools (`code_mode`).

use serde_json::{json, Value};

/// The one argument of a freeform tool offered as a chat function.
pub(crate) const INPUT: &str = "input";

/// A chat function tool with the one string argument `input`.
pub(crate) fn function(name: &str, description: &str) -> Value {
    json!({"type": "function", "function": {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {INPUT: {"type": "string",
            "description": "The tool's whole input, as raw text."}}, "required": [INPUT]},
    }})
}

/// The string a model's call of a freeform tool carries: `input` of its JSON arguments, or
/// the arguments themselves when they are not such an object (some models send the raw text).
pub(crate) fn input_of(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut args)) => match args.remove(INPUT) {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => match args
                .into_iter()
                .find_map(|(_, v)| v.as_str().map(str::to_string))
            {
                Some(s) => s,
                None => arguments.to_string(),
            },
        },
        _ => arguments.to_string(),
    }
}

/// The chat arguments of a `custom_tool_call` in the history.
pub(crate) fn arguments_of(input: &str) -> String {
    json!({ INPUT: input }).to_string()
}
