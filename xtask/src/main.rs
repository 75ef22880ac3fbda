//! `cargo xtask`: contributor tasks.
//!
//! - `cargo xtask ci`: rustfmt check, clippy with `-D warnings`, the dependency-direction check and
//!   every test of the workspace (doctests included). This is the project's test command.
//! - `cargo xtask bench`: the criterion benchmarks.
//! - `cargo xtask tidy`: the dependency-direction check alone.

mod tidy;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "Tollgate contributor tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Format check, clippy -D warnings, tidy, and all tests.
    Ci,
    /// Run the criterion benchmarks (hook-core and the others that have them).
    Bench {
        /// Extra arguments passed to criterion, e.g. a benchmark name filter.
        #[arg(trailing_var_arg = true)]
        args: Vec<String>,
    },
    /// Check that crate dependencies follow docs/ARCHITECTURE.md.
    Tidy,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    match cli.task {
        Task::Ci => {
            cargo(&root, &["fmt", "--all", "--", "--check"])?;
            cargo(&root, &["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"])?;
            tidy::check(&root).map_err(|problems| anyhow::anyhow!("tidy:\n{}", problems.join("\n")))?;
            cargo(&root, &["test", "--workspace", "--locked"])?;
        }
        Task::Bench { args } => {
            let mut cmd = vec!["bench", "--locked", "--benches"];
            for package in BENCHED_PACKAGES {
                cmd.extend(["-p", package]);
            }
            if !args.is_empty() {
                cmd.push("--");
                cmd.extend(args.iter().map(String::as_str));
            }
            cargo(&root, &cmd)?;
        }
        Task::Tidy => {
            tidy::check(&root).map_err(|problems| anyhow::anyhow!("tidy:\n{}", problems.join("\n")))?;
            eprintln!("tidy: dependency direction ok");
        }
    }
    Ok(())
}

/// Packages with criterion benchmarks.
const BENCHED_PACKAGES: &[&str] = &["hook-core", "hook-builtins", "channel-feishu"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace root").to_path_buf()
}

fn cargo(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let status =
        Command::new(&cargo).args(args).current_dir(root).status().with_context(|| format!("running {cargo}"))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
