//! A self-contained HTML page: inline style, inline SVG charts, tables that sort when a heading is clicked, and
//! nothing fetched from the network.

use std::fmt::Write as _;

use crate::charts::draw::ChartError;
use crate::charts::{Chart, svg};

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.6em}h2{border-bottom:2px solid #1f77b4;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:1em 0;font-size:.9em;display:block;overflow-x:auto;max-width:100%}th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#eef3f8}td.n{text-align:right;font-variant-numeric:tabular-nums}\
table.sortable th{cursor:pointer}tr:nth-child(even) td{background:#fafafa}\
svg{max-width:100%;height:auto;display:block;margin:1em 0}.note{color:#666}code{font-size:.95em}\
.verdict{font-size:1.05em;background:#eef3f8;padding:.6em .8em;border-left:4px solid #1f77b4}\
ol.findings{padding-left:2em}ol.findings li{margin:.7em 0}ol.findings p{margin:.15em 0;overflow-wrap:anywhere}\
.finding{font-weight:600}.numbers{color:#444}\
.sev{display:inline-block;min-width:4.6em;font-size:.75em;padding:.05em .3em;border-radius:3px;color:#fff;text-align:center;margin-right:.3em}\
li.high .sev{background:#c0392b}li.medium .sev{background:#b9770e}li.low .sev{background:#888}\
summary{cursor:pointer;color:#555}";

/// Sorts a `table.sortable` by the clicked column: by each cell's `data-v` number when it has one, else its text.
const SORT_SCRIPT: &str = "document.querySelectorAll('table.sortable th').forEach(function(th,col){\
th.addEventListener('click',function(){var body=th.closest('table').tBodies[0];\
var asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';\
var key=function(tr){var td=tr.cells[col];var v=td.dataset.v;return v===undefined?td.textContent:parseFloat(v);};\
Array.from(body.rows).sort(function(a,b){var x=key(a),y=key(b);\
var c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));return asc?c:-c;})\
.forEach(function(tr){body.appendChild(tr);});});});";

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table cell: text, and the number it sorts by.
#[derive(Clone, Debug)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
        }
    }

    pub fn num(text: impl Into<String>, value: f64) -> Cell {
        Cell {
            text: text.into(),
            sort: Some(value),
        }
    }

    pub fn int(v: u64) -> Cell {
        Cell::num(v.to_string(), v as f64)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub sortable: bool,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    pub fn sortable(mut self) -> Table {
        self.sortable = true;
        self
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }
}

/// The page being written.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    pub fn new(title: &str) -> Page {
        let mut body = String::new();
        let _ = writeln!(body, "<h1>{}</h1>", escape(title));
        Page {
            title: title.to_owned(),
            body,
        }
    }

    /// A section heading, with `id` as its anchor.
    pub fn section(&mut self, id: &str, heading: &str) {
        let _ = writeln!(
            self.body,
            "<h2 id=\"{}\">{}</h2>",
            escape(id),
            escape(heading)
        );
    }

    pub fn subsection(&mut self, heading: &str) {
        let _ = writeln!(self.body, "<h3>{}</h3>", escape(heading));
    }

    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A paragraph in grey: what a section lacks, and why.
    pub fn note(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    /// HTML the caller has escaped.
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
        self.body.push('\n');
    }

    pub fn chart(&mut self, chart: &impl Chart) -> Result<(), ChartError> {
        self.body.push_str(&svg(chart)?);
        self.body.push('\n');
        Ok(())
    }

    pub fn table(&mut self, t: &Table) {
        let class = if t.sortable {
            " class=\"sortable\""
        } else {
            ""
        };
        let _ = write!(self.body, "<table{class}><thead><tr>");
        for h in &t.headers {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body.push_str("</tr></thead><tbody>\n");
        for row in &t.rows {
            self.body.push_str("<tr>");
            for c in row {
                match c.sort {
                    Some(v) if v.is_finite() => {
                        let _ = write!(
                            self.body,
                            "<td class=\"n\" data-v=\"{v}\">{}</td>",
                            escape(&c.text)
                        );
                    }
                    Some(_) => {
                        let _ = write!(self.body, "<td class=\"n\">{}</td>", escape(&c.text));
                    }
                    None => {
                        let _ = write!(self.body, "<td>{}</td>", escape(&c.text));
                    }
                }
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</tbody></table>\n");
    }

    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{}</title><style>{STYLE}</style></head>\n<body>\n{}<script>{SORT_SCRIPT}</script>\n</body></html>\n",
            escape(&self.title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_sort_by_value() {
        let mut p = Page::new("a <b> & \"c\"");
        let mut t = Table::new(&["file", "bytes"]).sortable();
        t.row(vec![Cell::text("<x>"), Cell::num("1.5 KiB", 1536.0)]);
        t.row(vec![Cell::text("y"), Cell::num("n/a", f64::NAN)]);
        p.table(&t);
        let html = p.finish();
        assert!(html.contains("<h1>a &lt;b&gt; &amp; &quot;c&quot;</h1>"));
        assert!(
            html.contains(
                "<tr><td>&lt;x&gt;</td><td class=\"n\" data-v=\"1536\">1.5 KiB</td></tr>"
            )
        );
        assert!(html.contains("<tr><td>y</td><td class=\"n\">n/a</td></tr>"));
        assert!(html.contains("<table class=\"sortable\">"));
        assert!(!html.contains("http"));
    }
}
