//! The dataset flavours cxrlake builds over the same lake as MIMIC-Ext-CXR-QBA, registered at one
//! point. A flavour is one crate, `crates/<flavour>/`: its domain logic, its stages
//! (`src/stages/`, one SQL file each under `sql/`), its SQL functions (`src/functions/`) and its
//! `FLAVOUR` declaration; adding one is a line here, its crate, and a line in the workspace's
//! `Cargo.toml` (see `docs/architecture.md`).

use std::sync::Arc;

use cxrlake_pipeline::flavours::Flavours;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};

/// Every flavour, in the order their stages run and `cxrlake.flavours` lists them.
pub const ALL: Flavours = &[
    cxrlake_gemex::stages::FLAVOUR,
    cxrlake_mimic_cxr_vqa::stages::FLAVOUR,
    cxrlake_rexvqa::stages::FLAVOUR,
    cxrlake_givcxr::stages::FLAVOUR,
];

/// A session with cxrlake's functions and the flavours' own (`Flavour::functions`): the session
/// factory of the `cxrlake` binary's lakes.
pub fn session_context_on(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> SessionContext {
    let ctx = cxrlake_udfs::session_context_on(config, runtime);
    for flavour in ALL {
        for function in (flavour.functions)() {
            ctx.register_udf(function);
        }
    }
    ctx
}
