//! The dc-* binaries whose command-line types live in their main.rs (private to it) are compiled into this crate
//! as modules: each main.rs is copied to OUT_DIR without its leading `//!` lines, which a module brought in with
//! `include!` cannot hold.

/// Binary name → its main.rs, relative to this crate. One place to change when a binary moves.
const BINARIES: &[(&str, &str)] = &[
    ("dc-model", "../../models/src/main.rs"),
    ("dc-pipeline", "../../pipelines/src/main.rs"),
    ("dc-report", "../../pipelines/report/src/main.rs"),
];

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (name, source) in BINARIES {
        println!("cargo::rerun-if-changed={source}");
        let text = std::fs::read_to_string(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        let body: String = text
            .lines()
            .skip_while(|l| l.starts_with("//!"))
            .flat_map(|l| [l, "\n"])
            .collect();
        std::fs::write(out.join(format!("{name}.rs")), body)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
