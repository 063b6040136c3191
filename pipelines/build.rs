//! The same `cfg(dc_root)` as the tracer's tests get, from the tracer's build script (see it for why).

#[path = "../tracer/build.rs"]
mod root;

fn main() {
    root::main();
}
