//! The model catalog: which providers exist, their endpoints, key variables and models.
//!
//! The default catalog (`providers.json`) is compiled into the binary; `FCM_CATALOG=path`
//! replaces it with a file of the same schema, which is how tests point fcm at fake
//! providers. Custom providers from the user's config are merged in by `config`. This module
//! also answers "which key does this provider use, and is it set?" without printing it.
//!
//! The files: `schema` (the types and lookups), `load` (the embedded catalog,
//! `FCM_CATALOG`, parsing and validation), `age` (its `updated` date and how old that is),
//! `keys` (which key a provider uses), `url` (its endpoints) and `lines` (a quota stated for
//! some models of a line, given to the others).

mod age;
mod keys;
mod lines;
mod load;
mod schema;
mod url;

pub use age::{Age, OLD_AFTER_DAYS};
pub use keys::{key_hint, key_id, process_env, ApiKey, KeyList, KeySource, KeyStatus};
pub use lines::bare_id;
pub use load::InvalidCatalog;
// Tests elsewhere start from the embedded catalog.
#[cfg(test)]
pub use load::EMBEDDED;
pub use schema::{tier_rank, Catalog, Model, ModelRef, Provider, TIERS};
pub(crate) use url::UrlError;
