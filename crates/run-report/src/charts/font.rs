//! The chart font. plotters' `ab_glyph` text backend has no system font: every
//! label needs a registered one, so DejaVu Sans (see `assets/DEJAVU-LICENSE.txt`)
//! is embedded in the binary and registered once as `sans-serif` before any
//! chart is drawn. The SVG backend also uses it to measure text.

use plotters::style::{register_font, FontStyle};
use std::sync::Once;

/// Family name charts ask for.
pub const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Register the embedded font (idempotent, thread-safe).
pub fn ensure_font() {
    REGISTER.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            // The font is a fixed, known-good file; if it ever failed to parse,
            // drawing text would report an error rather than panic.
            let _ = register_font(FAMILY, style, DEJAVU_SANS);
        }
    });
}

/// Chart labels come from experiment files: keep them printable.
pub fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}
