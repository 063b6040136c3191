//! dc-model: which layers and functions explain I/O bandwidth.
use anyhow::{Context, Result};
use clap::{Arg, Parser, Subcommand};
use datasets::cli::OutputArgs;
use datasets::output::Output;
use models::options::RANKING;
use models::{ModelError, RankOptions, SampleOptions, interrupt};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dc-model",
    version,
    about = "Which kernel layers and functions explain I/O bandwidth"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Rank a layer's features by how much they explain the target, with held-out quality.
    Rank(RankArgs),
    /// Write the rows and columns `rank` models for one layer as CSV (features, y, split, row, ts, group).
    #[command(mut_args(without_ranking))]
    Dataset(DatasetArgs),
    /// The DataCrumbs analysis' random forest on one layer: training and held-out R², features ranked
    /// by impurity importance to 99%.
    #[command(mut_args(without_ranking))]
    Forest(ModelArgs),
    /// Rules that set the slowest 10% of calls (by target, within each op and size) apart, from a
    /// depth-3 decision tree, with their precision and recall on the held-out rows.
    #[command(mut_args(without_ranking))]
    Rules(ModelArgs),
}

/// A one-layer command's arguments: the ranking's own options are hidden, and refused if given.
fn without_ranking(arg: Arg) -> Arg {
    if arg.get_help_heading() == Some(RANKING) {
        arg.hide(true).conflicts_with("layer")
    } else {
        arg
    }
}

/// One layer's rows of a matrix, as `rank` splits them.
#[derive(clap::Args)]
struct LayerArgs {
    /// Feature matrix written by dc-features (.parquet, .csv or .jsonl).
    features: PathBuf,
    /// The layer whose rows are taken.
    #[arg(long)]
    layer: String,
    #[command(flatten)]
    options: RankOptions,
}

impl LayerArgs {
    /// The layer's dataset, errors naming the matrix file.
    fn dataset(&self) -> Result<models::Dataset> {
        let matrix = features::FeatureMatrix::read(&self.features)?;
        models::input::layer_dataset(&matrix, &self.layer, &self.options)
            .with_context(|| self.features.display().to_string())
    }
}

#[derive(clap::Args)]
struct ModelArgs {
    #[command(flatten)]
    rows: LayerArgs,
    /// Write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    write: OutputArgs,
}

#[derive(clap::Args)]
struct DatasetArgs {
    #[command(flatten)]
    rows: LayerArgs,
    /// Output CSV.
    #[arg(long, short)]
    output: PathBuf,
    #[command(flatten)]
    write: OutputArgs,
}

#[derive(clap::Args)]
struct RankArgs {
    /// Feature matrix written by dc-features (.parquet, .csv or .jsonl).
    features: PathBuf,
    /// Layer to rank (repeatable), or `all` for every layer.
    #[arg(long = "layer", required = true)]
    layers: Vec<String>,
    #[command(flatten)]
    options: RankOptions,
    #[command(flatten)]
    sample: SampleArgs,
    /// Memory the fit may take, in GB: a fit that would need more is refused before it starts
    /// [default: what the system, or this process's cgroup, has available].
    #[arg(long, value_name = "GB", value_parser = gigabytes)]
    memory: Option<u64>,
    /// Write the whole report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    write: OutputArgs,
}

/// Ranking a Parquet matrix too large to hold on a stratified sample of it.
#[derive(clap::Args)]
#[command(next_help_heading = "Sample")]
struct SampleArgs {
    /// Read the matrix by row groups and fit on a stratified sample of its calls (each kind of call
    /// its share), judged on rows held out from the whole matrix, with bootstrap intervals.
    #[arg(long)]
    sample: bool,
    /// Rows fitted on, at most.
    #[arg(long, default_value_t = SampleOptions::default().max_rows, requires = "sample")]
    max_rows: usize,
    /// Rows held out from the whole matrix (about this many).
    #[arg(long, default_value_t = SampleOptions::default().held_out_rows, requires = "sample")]
    held_out_rows: usize,
    /// The half-width wanted for each layer's importance share's 95% interval; the sample grows
    /// to reach it, up to --max-rows.
    #[arg(long, default_value_t = SampleOptions::default().share_error, requires = "sample")]
    share_error: f64,
    /// Refits on bootstrap resamples, for the intervals.
    #[arg(long, default_value_t = SampleOptions::default().bootstrap, requires = "sample")]
    bootstrap: usize,
    /// Rows of the first fit, whose spread sets the sample's size.
    #[arg(long, default_value_t = SampleOptions::default().pilot_rows, requires = "sample")]
    pilot_rows: usize,
}

/// A positive number of GB, as bytes.
fn gigabytes(s: &str) -> Result<u64, String> {
    match s.parse::<f64>() {
        Ok(gb) if gb > 0.0 && gb.is_finite() => Ok((gb * 1e9) as u64),
        _ => Err(format!("`{s}` is not a positive number of GB")),
    }
}

impl SampleArgs {
    fn options(&self, memory: Option<u64>) -> SampleOptions {
        SampleOptions {
            max_rows: self.max_rows,
            held_out_rows: self.held_out_rows,
            share_error: self.share_error,
            bootstrap: self.bootstrap,
            pilot_rows: self.pilot_rows,
            memory,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = interrupt::stop_on_ctrl_c() {
        eprintln!("dc-model: cannot handle Ctrl-C: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Rank(args) => rank(args),
        Command::Dataset(args) => dataset(args),
        Command::Forest(args) => one_layer(args, |layer, ds, opts| {
            let r = models::forest::fit(layer, ds, opts)?;
            Ok((models::table::forest(&r), serde_json::to_string_pretty(&r)?))
        }),
        Command::Rules(args) => one_layer(args, |layer, ds, opts| {
            let r = models::rules::learn(layer, ds, opts)?;
            Ok((models::table::rules(&r), serde_json::to_string_pretty(&r)?))
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) if interrupt::requested() => {
            eprintln!("dc-model: interrupted; nothing was written");
            ExitCode::from(interrupt::EXIT_CODE)
        }
        Err(e) => {
            let constant = e
                .chain()
                .any(|c| matches!(c.downcast_ref(), Some(ModelError::ConstantColumn { .. })));
            let hint = match datasets::cli::remedy_in(e.as_ref()) {
                None if constant => "; give --drop-constant (its default) to leave them out".into(),
                remedy => datasets::cli::hint_suffix(remedy),
            };
            eprintln!("dc-model: {e:#}{hint}");
            ExitCode::FAILURE
        }
    }
}

/// The output for `--json`, created before the long work so that a path that cannot be written
/// is refused first; it is written and committed at the end.
fn json_output(path: Option<&PathBuf>, write: &OutputArgs) -> Result<Option<Output>> {
    Ok(path
        .map(|p| Output::create(p, write.existing()))
        .transpose()?)
}

fn commit_json(out: Option<Output>, text: String) -> Result<()> {
    if let Some(mut out) = out {
        out.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", out.path().display()))?;
        out.commit()?;
    }
    Ok(())
}

fn dataset(args: DatasetArgs) -> Result<()> {
    let opts = &args.rows.options;
    let ds = args.rows.dataset()?;
    let mut out = std::io::BufWriter::new(Output::create(&args.output, args.write.existing())?);
    models::export::write_csv(&ds, opts.split, opts.test_fraction, opts.seed, &mut out)
        .and_then(|()| out.flush())
        .with_context(|| format!("writing {}", args.output.display()))?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    Ok(file.commit()?)
}

/// Fits one layer's model on the rank split and prints its table, and its JSON where asked.
fn one_layer(
    args: ModelArgs,
    model: impl Fn(&str, &models::Dataset, &RankOptions) -> Result<(String, String)>,
) -> Result<()> {
    let opts = &args.rows.options;
    opts.validate()?;
    let json = json_output(args.json.as_ref(), &args.write)?;
    let ds = args.rows.dataset()?;
    let (table, text) = model(&args.rows.layer, &ds, opts)
        .with_context(|| args.rows.features.display().to_string())?;
    print!("{table}");
    commit_json(json, text + "\n")
}

fn rank(args: RankArgs) -> Result<()> {
    let opts = RankOptions {
        layers: args.layers,
        ..args.options
    };
    opts.validate()?;
    let json = json_output(args.json.as_ref(), &args.write)?;
    let parquet =
        features::format::Format::of(&args.features)? == features::format::Format::Parquet;
    let pb = models::progress::bar(&format!("reading {}", args.features.display()));
    let report = if args.sample.sample {
        if !parquet {
            anyhow::bail!(
                "{}: --sample reads a matrix by Parquet row groups; write it as .parquet",
                args.features.display()
            );
        }
        models::rank_sampled(
            &args.features,
            &opts,
            &args.sample.options(args.memory),
            &pb,
        )
        .map_err(with_hint)
        .with_context(|| args.features.display().to_string())?
    } else {
        if parquet {
            let (rows, columns) = features::format::parquet::shape(&args.features)?;
            models::sampled::check_memory(rows, columns, false, args.memory)
                .map_err(with_hint)
                .with_context(|| args.features.display().to_string())?;
        }
        let matrix = features::FeatureMatrix::read(&args.features)?;
        models::rank_with_progress(&matrix, &opts, &pb)
            .with_context(|| args.features.display().to_string())?
    };
    pb.finish_and_clear();
    print!("{}", models::table::render(&report));
    commit_json(json, serde_json::to_string_pretty(&report)?)
}

/// The option that would make a fit too large for memory fit: the sample, or Dask for the full fit.
fn with_hint(e: ModelError) -> anyhow::Error {
    match &e {
        ModelError::TooLarge { sampled: false, .. } => anyhow::anyhow!(
            "{e}; rank a stratified sample of it instead (--sample), or fit every row on a Dask \
             cluster (datacrumbs.dask.rank in the Python package)"
        ),
        ModelError::TooLarge { sampled: true, .. } => {
            anyhow::anyhow!(
                "{e}; hold fewer rows (--max-rows, --held-out-rows), or fit every row on a \
                 Dask cluster (datacrumbs.dask.rank in the Python package)"
            )
        }
        _ => e.into(),
    }
}
