//! What `fcm top`'s action keys do, each returning the sentence for the bottom line:
//! `r` resets a model's breaker (on the running server, else in `breakers.json`), `p`
//! pins or unpins it (set `top` in config.json, through the format-keeping
//! [`edit_config`]), `s` starts `fcm serve --detach`. What pinning changes is decided by
//! [`pin_change`], a pure function of the config as it is.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use anyhow::Result;
use serde_json::json;

use crate::commands::admin::admin_post;
use crate::commands::{edit_config, Setup};
use crate::state::breaker::BreakerBook;
use crate::state::config::{Config, ModelSet};
use crate::state::files;
use crate::state::serve_info::live_server;

use super::board::PIN_SET;

/// `r`: resets `model`'s breaker where it lives now.
pub(crate) fn reset(setup: &Setup, model: &str) -> Result<String> {
    if let Some(info) = live_server() {
        let path = format!(
            "/fcm/admin/breakers/reset?model={}",
            percent_encoding::utf8_percent_encode(model, percent_encoding::NON_ALPHANUMERIC)
        );
        let v = admin_post(&info, setup, &path)?;
        return Ok(if v["reset"].as_u64().unwrap_or(0) > 0 {
            format!("{model}: breaker reset to CLOSED on the running server")
        } else {
            format!("{model}: its breaker was already CLOSED with nothing to forget")
        });
    }
    let path = files::state_file("breakers.json")?;
    let mut book: BreakerBook = files::load_json(&path)?;
    if book.models.remove(model).is_none() {
        return Ok(format!("{model}: its breaker was already CLOSED"));
    }
    book.version = 1;
    files::write_json_atomic(&path, &book)?;
    Ok(format!("{model}: breaker reset in breakers.json"))
}

/// What pinning or unpinning one model does to config.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PinChange {
    /// Set `top` becomes (or is made as) these models, and the active set.
    Pin { models: Vec<String>, create: bool },
    /// Set `top` keeps these models.
    Unpin { models: Vec<String> },
    /// Set `top` lost its last model: it goes, and so does `activeSet` when it named it.
    RemoveSet { was_active: bool },
}

/// The change `p` on `model` makes. Pinning puts it first in set `top`; a new `top` takes
/// the active set's order behind it, so pinning never drops what was routed first before.
/// Unpinning takes it out of `top`.
pub(crate) fn pin_change(
    sets: &BTreeMap<String, ModelSet>,
    active: Option<&str>,
    model: &str,
) -> PinChange {
    let top = sets.get(PIN_SET);
    let others =
        |list: &[String]| -> Vec<String> { list.iter().filter(|m| *m != model).cloned().collect() };
    match top {
        Some(set) if set.models.iter().any(|m| m == model) => {
            let rest = others(&set.models);
            if rest.is_empty() {
                PinChange::RemoveSet {
                    was_active: active == Some(PIN_SET),
                }
            } else {
                PinChange::Unpin { models: rest }
            }
        }
        Some(set) => {
            let mut models = vec![model.to_string()];
            models.extend(others(&set.models));
            PinChange::Pin {
                models,
                create: false,
            }
        }
        None => {
            let mut models = vec![model.to_string()];
            if let Some(set) = active.and_then(|a| sets.get(a)) {
                models.extend(others(set.members()));
            }
            PinChange::Pin {
                models,
                create: true,
            }
        }
    }
}

/// `p`: pins or unpins `model` in config.json.
pub(crate) fn toggle_pin(model: &str, server_running: bool) -> Result<String> {
    let path = files::state_file("config.json")?;
    let config = Config::load(&path)?.config;
    let change = pin_change(
        &config.router.sets,
        config.router.active_set.as_deref(),
        model,
    );
    edit_config(|doc| {
        match &change {
            PinChange::Pin { models, create } => {
                if *create {
                    doc.set(
                        &["router", "sets", PIN_SET],
                        &json!({"strategy": "fallback", "models": models}),
                    )?;
                } else {
                    doc.set(&["router", "sets", PIN_SET, "models"], &json!(models))?;
                }
                doc.set(&["router", "activeSet"], &json!(PIN_SET))?;
            }
            PinChange::Unpin { models } => {
                doc.set(&["router", "sets", PIN_SET, "models"], &json!(models))?;
            }
            PinChange::RemoveSet { was_active } => {
                doc.remove(&["router", "sets", PIN_SET]);
                if *was_active {
                    doc.remove(&["router", "activeSet"]);
                }
            }
        }
        Ok(())
    })?;
    let done = match &change {
        PinChange::Pin { .. } => {
            format!("{model} pinned: first in set \"{PIN_SET}\", the active set")
        }
        PinChange::Unpin { .. } => format!("{model} unpinned from set \"{PIN_SET}\""),
        PinChange::RemoveSet { was_active: true } => format!(
            "{model} unpinned; set \"{PIN_SET}\" is empty and gone: model \"fcm\" routes over all models"
        ),
        PinChange::RemoveSet { was_active: false } => {
            format!("{model} unpinned; set \"{PIN_SET}\" is empty and gone")
        }
    };
    Ok(if server_running {
        format!("{done} (config.json); restart fcm serve to apply it")
    } else {
        format!("{done} (config.json)")
    })
}

/// `s`: runs `fcm serve --detach` (which returns once the server answers) and says how it
/// went. Blocking: run it off the screen's thread.
pub(crate) fn start_server() -> String {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return format!("cannot find fcm itself to start the server: {e}"),
    };
    let out = Command::new(exe)
        .args(["serve", "--detach"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() => match live_server() {
            Some(info) => format!(
                "started fcm serve at http://{}/v1 (pid {}); `fcm stop` stops it",
                info.address, info.pid
            ),
            None => "fcm serve --detach ran, but no server is recorded".into(),
        },
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!(
                "fcm serve --detach failed: {}",
                first.trim_start_matches("fcm: ")
            )
        }
        Err(e) => format!("cannot run fcm serve --detach: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(models: &[&str]) -> ModelSet {
        serde_json::from_value(json!({"models": models})).unwrap()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pinning_and_unpinning() {
        let mut sets = BTreeMap::new();
        assert_eq!(
            pin_change(&sets, None, "p/a"),
            PinChange::Pin {
                models: strings(&["p/a"]),
                create: true
            },
            "a new set of one"
        );
        sets.insert("coding".to_string(), set(&["p/b", "p/a", "p/c"]));
        assert_eq!(
            pin_change(&sets, Some("coding"), "p/a"),
            PinChange::Pin {
                models: strings(&["p/a", "p/b", "p/c"]),
                create: true
            },
            "the active set's order follows the pinned model"
        );
        sets.insert(PIN_SET.to_string(), set(&["p/x", "p/y"]));
        assert_eq!(
            pin_change(&sets, Some(PIN_SET), "p/y"),
            PinChange::Unpin {
                models: strings(&["p/x"])
            }
        );
        assert_eq!(
            pin_change(&sets, Some(PIN_SET), "p/z"),
            PinChange::Pin {
                models: strings(&["p/z", "p/x", "p/y"]),
                create: false
            },
            "pinned first, the others keep their order"
        );
        sets.insert(PIN_SET.to_string(), set(&["p/x"]));
        assert_eq!(
            pin_change(&sets, Some(PIN_SET), "p/x"),
            PinChange::RemoveSet { was_active: true }
        );
        assert_eq!(
            pin_change(&sets, Some("coding"), "p/x"),
            PinChange::RemoveSet { was_active: false }
        );
    }
}
