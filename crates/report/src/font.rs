//! The one font of every chart: DejaVu Sans, embedded by the `dejavu` crate (Bitstream Vera
//! licence, free to embed) and registered with plotters' `ab_glyph` renderer under the name
//! `sans-serif`, so PNG text needs no system font; SVG text names `sans-serif` and the viewer
//! draws it with its own.

use std::sync::OnceLock;

use plotters::style::{FontStyle, register_font};

use crate::error::{ReportError, Result};

/// The family every chart's text uses.
pub const FAMILY: &str = "sans-serif";

/// Registers the embedded font once per process.
pub fn register() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ReportError::Chart {
            figure: "(font)".into(),
            reason: "the embedded DejaVu Sans font could not be parsed".into(),
        })
    }
}
