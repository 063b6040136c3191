fn main() -> anyhow::Result<()> {
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../tracer-ebpf"),
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
}
