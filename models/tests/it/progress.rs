//! dc-model shows how far a ranking has got on a terminal, whatever the matrix's size, and nothing on a pipe.
use std::path::PathBuf;
use std::process::Command;

use datasets::output::Existing;
use features::BuildOptions;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn rank_shows_its_fits_on_a_terminal_and_nothing_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
    );
    let m = features::build(&[PathBuf::from(trace)], &BuildOptions::default()).unwrap();
    let matrix = dir.path().join("crs.parquet");
    m.write(&matrix, Existing::Refuse).unwrap();
    let args = [
        "rank",
        matrix.to_str().unwrap(),
        "--layer",
        "vfs",
        "--drop-constant",
    ];
    let piped = Command::new(env!("CARGO_BIN_EXE_dc-model"))
        .args(args)
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(text(&piped.stderr), "");
    let table = text(&piped.stdout);
    assert!(table.contains("layer vfs: "), "{table}");
    // script(1) gives the command a terminal: the reading spinner, then the count of fits, then the same table.
    let command = format!("{} {}", env!("CARGO_BIN_EXE_dc-model"), args.join(" "));
    let run = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let screen = text(&run.stdout);
    assert!(
        screen.contains(&format!("reading {}", matrix.display())),
        "{screen:?}"
    );
    assert!(screen.contains("model fits"), "{screen:?}");
    assert!(screen.ends_with(&table.replace('\n', "\r\n")), "{screen:?}");
}
