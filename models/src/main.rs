//! dc-model: which layers and functions explain I/O bandwidth.
use anyhow::{Context, Result};
use clap::{Arg, Parser, Subcommand};
use datasets::cli::OutputArgs;
use datasets::output::Output;
use models::options::RANKING;
use models::{RankOptions, interrupt};
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
    /// Write the whole report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    write: OutputArgs,
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
            eprintln!("dc-model: {e:#}");
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
    let pb = models::progress::bar(&format!("reading {}", args.features.display()));
    let matrix = features::FeatureMatrix::read(&args.features)?;
    let report = models::rank_with_progress(&matrix, &opts, &pb)
        .with_context(|| args.features.display().to_string())?;
    pb.finish_and_clear();
    print!("{}", models::table::render(&report));
    commit_json(json, serde_json::to_string_pretty(&report)?)
}
