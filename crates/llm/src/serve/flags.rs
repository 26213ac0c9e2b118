//! `throng serve llm`'s flags as a clap struct (feature `clap`), and the server they make as
//! core's [`throng_core::flags::ServeFlags`], which HTTP's registry line names.

use std::net::SocketAddr;
use std::time::Duration;

use super::{Fault, ServeConfig, Spread};

/// The flags of `throng serve llm`: an OpenAI-compatible streaming server whose timing and
/// lengths are programmed.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Time to first token, from a request's arrival: a duration (50ms) or a range drawn from
    /// uniformly per request (20ms..80ms).
    #[arg(long, value_name = "D|A..B", default_value = "50ms")]
    pub ttft: Spread<Duration>,
    /// Time per prompt token (a word of the prompt) added to the TTFT, as a server's prefill
    /// grows with the prompt.
    #[arg(long, value_name = "D", default_value = "0s", value_parser = humantime::parse_duration)]
    pub prefill: Duration,
    /// The gap between tokens: a duration or a range drawn from per token.
    #[arg(long, value_name = "D|A..B", default_value = "10ms")]
    pub itl: Spread<Duration>,
    /// Output tokens of an answer (a request's max_tokens caps it): a count or a range drawn
    /// from per request.
    #[arg(long, value_name = "N|A..B", default_value = "64")]
    pub output_tokens: Spread<u32>,
    /// Seed of the draws: the same seed draws the same values for the same request, in
    /// arrival order.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The model named in answers to requests that name none.
    #[arg(long, default_value = "throng-testbed")]
    pub model: String,
    /// A fault instead of a good answer: cut:N (the stream cut after N tokens), status:CODE
    /// (an error answer) or stall:N (silent after N tokens).
    #[arg(long, value_name = "FAULT")]
    pub fault: Option<Fault>,
    /// The fault hits one request in this many (1: every one).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub fault_every: u64,
    /// At most this many answers generated at once (a server's batch): a request beyond
    /// waits for one to end, and the wait is part of its TTFT.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_streams: Option<u64>,
}

impl ServeArgs {
    /// The server these flags describe.
    ///
    /// # Errors
    /// A host and port that are not an address.
    pub fn config(&self) -> Result<ServeConfig, String> {
        let listen: SocketAddr = format!("{}:{}", self.host, self.port)
            .parse()
            .or_else(|_| format!("[{}]:{}", self.host, self.port).parse())
            .map_err(|_| {
                format!(
                    "--host {:?}: not an IP address (a name is not resolved here)",
                    self.host
                )
            })?;
        Ok(ServeConfig {
            listen,
            ttft: self.ttft,
            prefill: self.prefill,
            itl: self.itl,
            output_tokens: self.output_tokens,
            seed: self.seed,
            model: self.model.clone(),
            fault: self.fault,
            fault_every: self.fault_every,
            max_streams: self
                .max_streams
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        })
    }
}

impl throng_core::flags::ServeFlags for ServeArgs {
    const NAME: &'static str = "llm";
    const ABOUT: &'static str = "An OpenAI-compatible streaming LLM server (/v1/chat/completions, \
        /v1/completions) whose time to first token, token gaps and output lengths are \
        programmed, with faults";

    fn serve(self, stop: throng_core::flags::Stop) -> throng_core::flags::Serving {
        use throng_core::flags::FlagsError;
        Box::pin(async move {
            let config = self.config().map_err(FlagsError::Input)?;
            let running = super::start(config).await.map_err(|e| {
                FlagsError::Runtime(format!("listening on {}:{}: {e}", self.host, self.port))
            })?;
            println!("serving on {}", running.url());
            stop.await;
            eprintln!("served {} requests", running.requests());
            // The testbed's own error, beside the truth it claims.
            let (late, read) = (running.lateness(), running.read_waits());
            eprintln!(
                "HTTP/1.1 streams: {} tokens written, late by {late}; {} requests read, \
                 after their arrival by {read}",
                late.count, read.count
            );
            running.stop();
            Ok(())
        })
    }
}
