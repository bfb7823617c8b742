//! Talking to a running `fcm serve` through its admin endpoints (loopback, same port).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::commands::Setup;
use crate::edge::access::{STOP_KEY_HEADER, STOP_PATH};
use crate::state::serve_info::ServeInfo;

fn call(info: &ServeInfo, setup: &Setup, method: &str, path: &str) -> Result<Value> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .proxy(None)
        .build()
        .new_agent();
    let url = format!("{}{path}", info.base_url());
    let auth = setup
        .config
        .serve
        .access_token(None)
        .map(|t| format!("Bearer {t}"));
    let response = match method {
        "POST" => {
            let mut r = agent.post(&url);
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            if let Some(key) = info.stop_key.as_deref().filter(|_| path == STOP_PATH) {
                r = r.header(STOP_KEY_HEADER, key);
            }
            r.send_empty()
        }
        _ => {
            let mut r = agent.get(&url);
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.call()
        }
    };
    let mut response = response.with_context(|| {
        format!(
            "cannot reach the running server at {} (pid {})",
            info.address, info.pid
        )
    })?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .context("reading the server's answer")?;
    if status == 401 {
        bail!("the running server requires its access token: set FCM_TOKEN");
    }
    if status != 200 {
        bail!("the running server answered {status}: {text}");
    }
    serde_json::from_str(&text).context("the server's answer is not JSON")
}

pub(crate) fn admin_get(info: &ServeInfo, setup: &Setup, path: &str) -> Result<Value> {
    call(info, setup, "GET", path)
}

pub(crate) fn admin_post(info: &ServeInfo, setup: &Setup, path: &str) -> Result<Value> {
    call(info, setup, "POST", path)
}
