//! The other layers in the 6.1 VM (libc uprobes, tracepoints), each layer's attach summary in
//! the VM and on the host, and the ranking of a traced workload's vfs and ext4 layers.

use datasets::Event;

use super::contains;
use super::debian61::{
    BLOCK, BLOCKS, KERNEL_CATS, TRACEPOINT_LAYERS, collected, host, kernel_functions,
};

#[test]
fn libc_uprobes_and_tracepoint_layers_work_on_6_1() {
    let _machine = test_support::machine();
    let c = collected("auto");
    assert_eq!(c.mechanism("libc"), "uprobe", "{}", c.text);
    for layer in TRACEPOINT_LAYERS {
        let mechanism = c.mechanism(layer);
        assert!(
            mechanism
                .split('+')
                .all(|m| ["tracepoint", "raw_tracepoint", "tp_btf"].contains(&m)),
            "{}: {layer} attached by {mechanism}",
            c.text
        );
        assert!(!c.attached(layer).is_empty(), "{}: {layer}", c.text);
    }
    for layer in ["sys", "libc", "block", "page_cache", "fs", "sched"] {
        assert!(
            c.events_in(layer) > 0,
            "{}: no {layer} events:\n{}",
            c.place,
            c.text
        );
    }
    assert_eq!(
        c.summary["drops"], 0,
        "{}: events lost:\n{}",
        c.place, c.text
    );
    let stdio = "/data/auto/stdio.dat";
    for (libc, sys) in [("fwrite", "write"), ("fread", "read")] {
        let calls: Vec<&Event> = c
            .of_layer("libc")
            .into_iter()
            .filter(|e| e.name == libc)
            .collect();
        assert_eq!(calls.len(), BLOCKS, "{}: {libc} calls", c.place);
        for call in calls {
            let inner: Vec<&Event> = c
                .inside(call, "sys")
                .into_iter()
                .filter(|s| s.name == sys)
                .collect();
            assert_eq!(inner.len(), 1, "{}: {sys} inside {call:?}", c.place);
            assert_eq!(c.file(inner[0]), Some(stdio), "{:?}", inner[0]);
        }
    }
    let raw = "/data/auto/raw.dat";
    let preads = c.calls("sys", "pread64", raw);
    assert_eq!(preads.len(), 2 * BLOCKS, "{}: pread64 on {raw}", c.place);
    for direct in &preads[BLOCKS..] {
        let block: Vec<&Event> = c
            .inside(direct, "block")
            .into_iter()
            .filter(|e| e.name.starts_with("block_device_"))
            .collect();
        assert_eq!(
            block.len(),
            1,
            "{}: block I/O inside O_DIRECT {direct:?}",
            c.place
        );
        assert_eq!(
            (block[0].name.as_str(), block[0].args.size),
            ("block_device_read", Some(BLOCK))
        );
    }
    for fsync in c.calls("sys", "fsync", raw) {
        let fs = c.names_inside(fsync, "fs");
        assert!(
            fs.iter().any(|n| n.starts_with("ext4_sync_file")),
            "{}: ext4 tracepoints inside {fsync:?}: {fs:?}",
            c.place
        );
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn attach_summary_names_each_layers_mechanism_in_the_vm_and_on_the_host() {
    let _machine = test_support::machine();
    let (vm, host) = (collected("auto"), host());
    for c in [vm, collected("fentry"), collected("kprobe"), host] {
        for layer in c.summary["layers"].as_array().into_iter().flatten() {
            let layer = layer["layer"].as_str().unwrap_or("");
            let line = c.text_line(layer);
            if c.attached(layer).is_empty() {
                assert!(line.contains("not attached"), "{}: {line}", c.place);
            } else {
                let probes = format!("{} {} probe", c.attached(layer).len(), c.mechanism(layer));
                assert!(line.contains(&probes), "{}: {line}", c.place);
            }
        }
    }
    for layer in TRACEPOINT_LAYERS {
        assert_eq!(vm.mechanism(layer), host.mechanism(layer), "{layer}");
    }
    // uprobe_multi links came in Linux 6.6: the VM's 6.1 attaches one uprobe per function.
    assert_eq!(vm.mechanism("libc"), "uprobe", "{}", vm.text);
    assert_eq!(host.mechanism("libc"), "uprobe_multi", "{}", host.text);
    assert_eq!(host.mechanism("kernel"), "none", "{}", host.text);
    assert_eq!(host.attached("kernel"), Vec::<&str>::new());
    let refused = host.refused("kernel");
    for f in kernel_functions() {
        for m in ["fentry", "kprobe"] {
            assert!(
                refused
                    .iter()
                    .any(|&(p, rm, why)| p == f && rm == m && !why.is_empty()),
                "host: no {m} refusal with a reason for {f}: {refused:?}"
            );
        }
    }
    let line = host.text_line("kernel");
    assert!(
        line.contains("fentry: ") && line.contains("kprobe: "),
        "host: {line}"
    );
}

/// The mission's question on our own trace: which VFS and which ext4 functions explain the
/// bandwidth of the workload's calls. vfs_read and vfs_write contain ext4's read and write.
#[test]
fn features_of_a_traced_workload_rank_the_vfs_and_ext4_layers() {
    let _machine = test_support::machine();
    let c = collected("rank");
    let write = c
        .of_layer("vfs")
        .into_iter()
        .find(|e| e.name == "vfs_write")
        .expect("a vfs_write event");
    assert!(
        c.of_layer("ext4")
            .iter()
            .any(|e| e.name == "ext4_file_write_iter" && contains(write, e)),
        "{}: no ext4_file_write_iter inside {write:?}",
        c.place
    );
    let matrix = features::from_events(&c.events, &features::BuildOptions::default())
        .expect("the VM's trace builds a feature matrix");
    let opts = models::RankOptions {
        layers: KERNEL_CATS.map(String::from).to_vec(),
        drop_constant: true,
        ..models::RankOptions::default()
    };
    let report = models::rank(&matrix, &opts).expect("vfs and ext4 rank");
    // A layer's ranking holds its own functions (inclusive `{layer}::`, exclusive `excl::{layer}`) and the
    // context columns every layer's model sees, marked as context.
    let ranked: Vec<(&str, Vec<&str>)> = report
        .layers
        .iter()
        .map(|l| {
            let features = l
                .ranking
                .iter()
                .filter(|f| !f.context)
                .map(|f| f.feature.as_str())
                .collect();
            (l.layer.as_str(), features)
        })
        .collect();
    for layer in KERNEL_CATS {
        let features = ranked
            .iter()
            .find(|(l, _)| *l == layer)
            .map(|(_, f)| f.clone())
            .unwrap_or_default();
        let own = |f: &&str| f.starts_with(&format!("{layer}::")) || *f == format!("excl::{layer}");
        assert!(
            features
                .iter()
                .any(|f| f.starts_with(&format!("{layer}::")))
                && features.iter().all(own),
            "{}: {layer} ranked {features:?}; all: {ranked:?}",
            c.place
        );
    }
}
