//! Colours and sizes shared by the charts, so a series looks the same in
//! every panel and every variant (the eye compares shapes, not legends).

use plotters::style::RGBColor;

pub const ATTEMPTS: RGBColor = RGBColor(214, 96, 77);
pub const DISTINCT: RGBColor = RGBColor(33, 102, 172);
pub const ARRIVALS: RGBColor = RGBColor(70, 70, 70);
pub const FAILURE: RGBColor = RGBColor(178, 24, 43);
pub const THRESHOLD: RGBColor = RGBColor(120, 120, 120);
pub const SLOTS_BUSY: RGBColor = RGBColor(33, 102, 172);
pub const WAITERS: RGBColor = RGBColor(230, 97, 1);
pub const SLOTS_TOTAL: RGBColor = RGBColor(20, 20, 20);
pub const CACHE_LOST: RGBColor = RGBColor(153, 52, 4);
pub const RECOMPUTED: RGBColor = RGBColor(117, 107, 177);
pub const WAVE: RGBColor = RGBColor(253, 141, 60);
pub const FAULT: RGBColor = RGBColor(215, 48, 39);
pub const ACTION: RGBColor = RGBColor(26, 152, 80);
pub const TEXT: RGBColor = RGBColor(30, 30, 30);
pub const MUTED: RGBColor = RGBColor(110, 110, 110);
pub const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
pub const GRID_BOLD: RGBColor = RGBColor(215, 215, 215);
pub const HEADER_BG: RGBColor = RGBColor(242, 242, 246);
pub const GOOD: RGBColor = RGBColor(26, 120, 60);
pub const BAD: RGBColor = RGBColor(200, 20, 30);

/// Opacity of fault/action shading.
pub const SHADE_ALPHA: f64 = 0.13;
/// A trigger's residue (after its fault was undone, until its work had left): violet.
pub const RESIDUE: RGBColor = RGBColor(128, 64, 200);

/// Colours for zones and variants, in order.
pub const PALETTE: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// The `i`-th palette colour (wraps around).
pub fn palette(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Variant colours: the first variant (usually before-fix) red, the second blue.
pub fn variant_color(i: usize) -> RGBColor {
    match i {
        0 => RGBColor(214, 39, 40),
        1 => RGBColor(31, 119, 180),
        n => palette(n),
    }
}

/// Default chart width in pixels.
pub const WIDTH: u32 = 1400;
/// Height of a chart's title strip.
pub const TITLE_H: u32 = 44;
/// Height of a variant's header strip in the wave chart.
pub const HEADER_H: u32 = 28;
/// Default height of one wave-chart panel.
pub const PANEL_H: u32 = 150;
/// Left label area of every panel (so all plots line up).
pub const Y_LABEL_W: u32 = 78;

/// `c` blended with white: `amount` 0 keeps it, 1 gives white.
pub fn lighten(c: RGBColor, amount: f64) -> RGBColor {
    let a = amount.clamp(0.0, 1.0);
    let f = |x: u8| (f64::from(x) + (255.0 - f64::from(x)) * a).round() as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}
