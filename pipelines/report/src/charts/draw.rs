//! What every chart shares: the [`Chart`] trait, its SVG and PNG rendering, the palette and the legend.
//!
//! Text in the PNGs uses the bundled DejaVu Sans, so no system font or fontconfig is needed.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result, anyhow};
use datasets::output::{self, Existing};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

pub type DrawResult = Result<()>;

/// A whole figure, or one panel of it.
pub type Area<DB> = DrawingArea<DB, Shift>;

/// A chart that draws itself on any backend, on an area already filled white.
pub trait Chart {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

fn register_fonts() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // The bundled fonts are valid TrueType; a failure would only leave PNG text blank.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// The chart as SVG text, to put inline in a page.
pub fn svg(chart: &impl Chart) -> Result<String> {
    register_fonts();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, chart.size()).into_drawing_area();
        fill_and_draw(&root, chart)?;
        root.present().map_err(|e| anyhow!("drawing SVG: {e}"))?;
    }
    Ok(out)
}

/// Writes `dir/name.svg` and `dir/name.png`.
pub fn render(dir: &Path, name: &str, chart: &impl Chart) -> Result<()> {
    register_fonts();
    let (w, h) = chart.size();
    let svg = dir.join(format!("{name}.svg"));
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, (w, h)).into_drawing_area();
        fill_and_draw(&root, chart).with_context(|| format!("drawing {}", svg.display()))?;
        root.present()
            .map_err(|e| anyhow!("drawing {}: {e}", svg.display()))?;
    }
    output::write(&svg, Existing::Replace, svg_text)?;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        fill_and_draw(&root, chart).with_context(|| format!("drawing {name}.png"))?;
        root.present()
            .map_err(|e| anyhow!("drawing {name}.png: {e}"))?;
    }
    let png = dir.join(format!("{name}.png"));
    let mut encoded = Vec::new();
    let mut enc = png::Encoder::new(&mut encoded, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc
        .write_header()
        .with_context(|| format!("encoding {}", png.display()))?;
    writer
        .write_image_data(&rgb)
        .with_context(|| format!("encoding {}", png.display()))?;
    writer
        .finish()
        .with_context(|| format!("encoding {}", png.display()))?;
    output::write(&png, Existing::Replace, encoded)?;
    Ok(())
}

fn fill_and_draw<DB: DrawingBackend>(root: &Area<DB>, chart: &impl Chart) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    chart.draw(root)
}

/// A legend entry: a short line in the series' style.
pub fn line_legend(style: ShapeStyle) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)
}

pub fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    font_size: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", font_size))
        .draw()?;
    Ok(())
}
