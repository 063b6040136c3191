//! What every chart shares: the [`Chart`] trait, its SVG and PNG rendering, the palette and the legend.
//!
//! Text in the PNGs uses the bundled DejaVu Sans, so no system font or fontconfig is needed.

use std::path::{Path, PathBuf};
use std::sync::Once;

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

/// A chart that could not be drawn, encoded or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters' error, in words: its type is its backend's.
    #[error("{0}")]
    Plot(String),
    /// Drawing one figure: `what` is its file, or `SVG` for a chart inline in a page.
    #[error("drawing {what}")]
    Draw {
        what: String,
        #[source]
        source: Box<ChartError>,
    },
    #[error("encoding {}", path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: png::EncodingError,
    },
    /// Writing a figure's file.
    #[error(transparent)]
    Write(#[from] datasets::Error),
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        ChartError::Plot(e.to_string())
    }
}

impl ChartError {
    fn drawing(what: impl Into<String>) -> impl FnOnce(ChartError) -> ChartError {
        let what = what.into();
        move |e| ChartError::Draw {
            what,
            source: Box::new(e),
        }
    }
}

pub type DrawResult = Result<(), ChartError>;

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
pub fn svg(chart: &impl Chart) -> Result<String, ChartError> {
    register_fonts();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, chart.size()).into_drawing_area();
        fill_and_draw(&root, chart)
            .and_then(|()| Ok(root.present()?))
            .map_err(ChartError::drawing("SVG"))?;
    }
    Ok(out)
}

/// Writes `dir/name.svg` and `dir/name.png`.
pub fn render(dir: &Path, name: &str, chart: &impl Chart) -> Result<(), ChartError> {
    register_fonts();
    let (w, h) = chart.size();
    let svg = dir.join(format!("{name}.svg"));
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, (w, h)).into_drawing_area();
        fill_and_draw(&root, chart)
            .and_then(|()| Ok(root.present()?))
            .map_err(ChartError::drawing(svg.display().to_string()))?;
    }
    output::write(&svg, Existing::Replace, svg_text)?;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        fill_and_draw(&root, chart)
            .and_then(|()| Ok(root.present()?))
            .map_err(ChartError::drawing(format!("{name}.png")))?;
    }
    let png = dir.join(format!("{name}.png"));
    let mut encoded = Vec::new();
    let mut enc = png::Encoder::new(&mut encoded, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()
        .and_then(|mut writer| {
            writer.write_image_data(&rgb)?;
            writer.finish()
        })
        .map_err(|source| ChartError::Encode {
            path: png.clone(),
            source,
        })?;
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
