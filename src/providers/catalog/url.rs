//! A provider's URLs: `baseUrl` with its `{VAR}` placeholders filled from the
//! environment, then the chat or model list path; a [`UrlError`] names what is missing.

use super::schema::Provider;

/// Why a provider's chat URL cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlError {
    /// `baseUrl` has a `{` without its `}`.
    Unclosed { provider: String },
    /// A `{VAR}` placeholder whose variable is not set.
    MissingVar { provider: String, var: String },
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlError::Unclosed { provider } => {
                write!(f, "unclosed {{ in baseUrl of provider {provider}")
            }
            UrlError::MissingVar { provider, var } => {
                write!(f, "{provider} needs {var} set (its URL contains {{{var}}})")
            }
        }
    }
}

impl std::error::Error for UrlError {}

impl Provider {
    /// The chat completions URL with `{VAR}` placeholders filled; an error names the variable.
    pub fn chat_url(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UrlError> {
        self.url(env, "/chat/completions")
    }

    /// The model list URL (`GET`), as [`chat_url`](Self::chat_url) builds its own.
    pub fn models_url(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UrlError> {
        self.url(env, "/models")
    }

    /// `baseUrl` with its placeholders filled, then `path`.
    fn url(&self, env: &dyn Fn(&str) -> Option<String>, path: &str) -> Result<String, UrlError> {
        let mut url = String::new();
        let mut rest = self.base_url.trim_end_matches('/');
        while let Some(start) = rest.find('{') {
            let end =
                rest[start..]
                    .find('}')
                    .map(|e| start + e)
                    .ok_or_else(|| UrlError::Unclosed {
                        provider: self.id.clone(),
                    })?;
            let var = &rest[start + 1..end];
            let value = env(var)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| UrlError::MissingVar {
                    provider: self.id.clone(),
                    var: var.to_string(),
                })?;
            url.push_str(&rest[..start]);
            url.push_str(&value);
            rest = &rest[end + 1..];
        }
        url.push_str(rest);
        url.push_str(path);
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use crate::providers::catalog::{Catalog, EMBEDDED};
    #[test]
    fn url_placeholders_are_filled_or_named() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        let cf = c.provider("cloudflare").unwrap();
        let err = cf.chat_url(&|_| None).unwrap_err();
        assert!(err.to_string().contains("CLOUDFLARE_ACCOUNT_ID"), "{err}");
        let url = cf.chat_url(&|_| Some("abc".into())).unwrap();
        assert_eq!(
            url,
            "https://api.cloudflare.com/client/v4/accounts/abc/ai/v1/chat/completions"
        );
    }
}
