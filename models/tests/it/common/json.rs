//! Checks on the JSON a report serializes to.

/// Paths (`a.b[2].c`) of the null values in a JSON report: serde_json writes a non-finite f64 as null,
/// so any path not among the optional fields is a number that went wrong.
pub fn nulls(v: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Null => out.push(path),
            serde_json::Value::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    walk(e, format!("{path}[{i}]"), out);
                }
            }
            serde_json::Value::Object(o) => {
                for (k, e) in o {
                    walk(e, format!("{path}.{k}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}
