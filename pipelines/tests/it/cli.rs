//! What `dc-pipeline` says before any work: its own `--help`; a pipeline file whose
//! options are out of bounds, refused when it loads; a report file that could not be replaced at the end,
//! refused before a run traces or a redraw reads anything.

use std::ffi::OsStr;
use std::process::Command;

/// Runs dc-pipeline; returns its standard error, after checking that it failed.
fn dc_pipeline_fails(args: &[&OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dc-pipeline"))
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn first_line_of_help(exe: &str) -> String {
    let out = Command::new(exe).arg("--help").output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_help_describes_dc_pipeline() {
    assert_eq!(
        first_line_of_help(env!("CARGO_BIN_EXE_dc-pipeline")),
        "A workload traced, turned into features, ranked per layer and reported, in one command"
    );
}

#[test]
fn a_model_value_out_of_bounds_is_refused_before_anything_is_traced() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "name = \"t\"\n[[workload]]\nname = \"dd\"\ncommand = [\"true\"]\n[model.gbm]\nn_estimators = 1000000000\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let stderr = dc_pipeline_fails(&[
        "run".as_ref(),
        pipeline.as_ref(),
        "--out".as_ref(),
        out_dir.as_ref(),
    ]);
    assert_eq!(
        stderr,
        format!(
            "dc-pipeline: step `load` failed: {}:6: field `model.gbm.n_estimators`: 1000000000 is not in [1, 100000]: every tree is kept in memory and costs a pass over the rows (scikit-learn's default is 100)\n",
            pipeline.display()
        )
    );
    assert!(!out_dir.exists());
}

const TRUE_PIPELINE: &str = "name = \"t\"\n[[workload]]\nname = \"t\"\ncommand = [\"true\"]\n";

#[test]
fn a_report_file_that_cannot_be_replaced_is_refused_before_anything_is_traced() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(&pipeline, TRUE_PIPELINE).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, out_dir.join("report.html")).unwrap();
    let stderr = dc_pipeline_fails(&[
        "run".as_ref(),
        pipeline.as_ref(),
        "--out".as_ref(),
        out_dir.as_ref(),
        "--resume".as_ref(),
    ]);
    assert_eq!(
        stderr,
        format!(
            "dc-pipeline: step `prepare` failed: {}: is a symbolic link; an output is never written through or over one\n",
            out_dir.join("report.html").display()
        )
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(std::fs::read_dir(out_dir.join("runs")).unwrap().count(), 0);
}

#[test]
fn a_redraw_refuses_a_report_file_that_cannot_be_replaced_before_reading_anything() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pipeline.toml"), TRUE_PIPELINE).unwrap();
    std::fs::create_dir(dir.path().join("report.md")).unwrap();
    let stderr = dc_pipeline_fails(&["report".as_ref(), dir.path().as_ref()]);
    assert_eq!(
        stderr,
        format!(
            "dc-pipeline report: {}: exists and is not a regular file\n",
            dir.path().join("report.md").display()
        )
    );
}

#[test]
fn a_resume_with_another_pipeline_is_refused_by_the_library_without_a_flag_and_the_binary_adds_it()
{
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(&pipeline, TRUE_PIPELINE).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let saved = out_dir.join("pipeline.toml");
    std::fs::write(&saved, TRUE_PIPELINE.replace("\"t\"", "\"other\"")).unwrap();

    let err = pipelines::pipeline::run::run(&pipelines::pipeline::run::RunOptions {
        pipeline: pipeline.clone(),
        out: out_dir.clone(),
        resume: true,
        exe: env!("CARGO_BIN_EXE_dc-pipeline").into(),
        progress: false,
    })
    .unwrap_err();
    assert_eq!(err.step, "prepare");
    let pipelines::pipeline::error::Error::Changed {
        pipeline: p,
        out,
        saved: s,
    } = &*err.cause
    else {
        panic!("not Changed: {err:?}")
    };
    assert_eq!(
        (p, out, s),
        (
            &pipeline,
            &out_dir.canonicalize().unwrap(),
            &saved.canonicalize().unwrap()
        )
    );
    let message = datasets::error::chain(&err);
    assert!(!message.contains("--"), "{message}");

    let stderr = dc_pipeline_fails(&[
        "run".as_ref(),
        pipeline.as_ref(),
        "--out".as_ref(),
        out_dir.as_ref(),
        "--resume".as_ref(),
    ]);
    assert_eq!(
        stderr,
        format!("dc-pipeline: {message}\ndc-pipeline: run without --resume to start over\n")
    );
}
