//! A workload of your own, written in Rust, with throng's whole command line: `-c`, `-n`, `-z`,
//! `-q` and the stages, `--threshold`, `--json` and `--report`, `--samples`, `--shard` and
//! `--start-at`, the live dashboard or the progress line, Ctrl-C, and the exit codes, beside a
//! flag of its own. Here the work is sorting a vector of `--size` random numbers; put your own
//! in `execute`.
//!
//!     cargo run --example own_workload -- --size 5000 -c 4 -n 2000 --threshold 'p99<50ms'

use clap::Parser;
use throng::core::{Driver, Outcome, StepInfo};

/// Sorts a vector of random numbers.
#[derive(Parser)]
#[command(name = "own_workload")]
struct Cli {
    /// How many numbers each sort takes.
    #[arg(long, default_value_t = 10_000)]
    size: usize,
    /// throng's flags.
    #[command(flatten)]
    run: throng::flags::RunFlags,
}

struct Sort {
    size: usize,
}

impl Driver for Sort {
    type Worker = ();
    /// Each user's buffer, reused, and its random state.
    type Session = (Vec<u64>, u64);

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: format!("sort {}", self.size),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _worker: &(), user: u64) -> (Vec<u64>, u64) {
        (Vec::with_capacity(self.size), user | 1)
    }

    async fn execute(&self, (buffer, state): &mut (Vec<u64>, u64), _step: usize) -> Outcome {
        buffer.clear();
        buffer.extend((0..self.size).map(|_| {
            // xorshift64: enough randomness for a sort to have work to do.
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state
        }));
        buffer.sort_unstable();
        Outcome {
            bytes_received: (self.size * 8) as u64,
            ..Outcome::default()
        }
    }
}

fn main() -> std::process::ExitCode {
    throng::flags::main(
        |cli: &Cli| match cli.size {
            0 => Err("--size must be at least 1".into()),
            size => Ok(("sort://".into(), Sort { size })),
        },
        |cli| &cli.run,
    )
}
