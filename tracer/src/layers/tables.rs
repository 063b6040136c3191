//! What the TOML tables dc-trace reads (the kernel layer map, the probe set, the wait table) check
//! alike: every error is `file:line: what`, at the line of the value it is about.

use datasets::InputError;
use datasets::input::Toml;
use datasets::vocab::layer::kernel_function_layers;
use regex::Regex;
use toml::Spanned;

/// `name` when it is a layer a kernel function may be filed under, or one of `more`; else
/// ``field: `name` is not a layer (layers: ...)`` at its line.
pub(crate) fn layer<'a>(
    input: &Toml,
    field: &str,
    name: &'a Spanned<String>,
    more: &[&str],
) -> Result<&'a String, InputError> {
    let layer = name.get_ref();
    let mut layers = kernel_function_layers();
    layers.extend(more);
    if layers.contains(&layer.as_str()) {
        return Ok(layer);
    }
    Err(input.error_at(
        name.span(),
        format!(
            "{field}: `{layer}` is not a layer (layers: {})",
            layers.join(", ")
        ),
    ))
}

/// The regex `pattern`, else ``field: `pattern` is not a valid regex: why`` at its line (without
/// `field: ` where the file's messages name none).
pub(crate) fn regex(
    input: &Toml,
    field: Option<&str>,
    pattern: &Spanned<String>,
) -> Result<Regex, InputError> {
    Regex::new(pattern.get_ref()).map_err(|e| {
        let field = field.map_or(String::new(), |f| format!("{f}: "));
        let what = format!("{field}`{}` is not a valid regex: {e}", pattern.get_ref());
        input.error_at(pattern.span(), what)
    })
}
