//! The LLM testbed on its own until Ctrl-C, before `throng serve llm` is wired:
//! `cargo run --release -p throng-llm --example serve -- --port 8000 --ttft 50ms --itl 10ms`
//! (the flags of [`throng_llm::serve::ServeArgs`]).

use clap::Parser;
use throng_llm::serve::{self, ServeArgs};

/// An OpenAI-compatible streaming server with programmed timing.
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn main() {
    let cli = Cli::parse();
    let config = match cli.args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let listen = config.listen;
    let served = rt.block_on(serve::serve(config, async {
        eprintln!("serving on http://{listen} until Ctrl-C");
        let _ = tokio::signal::ctrl_c().await;
    }));
    if let Err(e) = served {
        eprintln!("error: listening on {listen}: {e}");
        std::process::exit(1);
    }
}
