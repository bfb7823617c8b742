//! The user's settings (`$FCM_HOME/config.json`): defaults, clamped ranges, and warnings.
//!
//! Every field has a default, so a missing file or a partial one works. Values out of range
//! are clamped and unknown keys are reported (a typo must not silently do nothing); both
//! come back as warnings for the command to print at start.
//!
//! The files: `settings` (the settings and their defaults) and `load` (reading, clamping,
//! warning, merging custom providers into the catalog).

mod load;
mod settings;

pub(crate) use settings::{
    BreakerConfig, Config, FailoverConfig, Prefer, ReasoningConfig, RouterConfig,
};
// A set's type lives with its rules in `sets`; the router names it through the config.
pub(crate) use crate::state::sets::ModelSet;
