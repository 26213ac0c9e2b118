//! `throng serve llm`'s flags, parsed as the command line will embed them.

use std::time::Duration;

use clap::Parser;
use throng_llm::serve::{Fault, ServeArgs, Spread};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn parse(args: &[&str]) -> Result<ServeArgs, String> {
    Cli::try_parse_from(std::iter::once("serve-llm").chain(args.iter().copied()))
        .map(|c| c.args)
        .map_err(|e| e.to_string())
}

#[test]
fn defaults_and_every_flag() {
    let config = parse(&[]).unwrap().config().unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:8000");
    assert_eq!(config.ttft, Spread::Fixed(Duration::from_millis(50)));
    assert_eq!(config.output_tokens, Spread::Fixed(64));
    let args = parse(&[
        "--host",
        "::1",
        "--port",
        "0",
        "--ttft",
        "100ms..300ms",
        "--itl",
        "20ms",
        "--output-tokens",
        "10..20",
        "--seed",
        "9",
        "--model",
        "llama",
        "--fault",
        "cut:5",
        "--fault-every",
        "10",
        "--max-streams",
        "4",
        "--prefill",
        "250us",
    ])
    .unwrap();
    let config = args.config().unwrap();
    assert_eq!(config.listen.to_string(), "[::1]:0");
    assert_eq!(
        config.ttft,
        Spread::Uniform(Duration::from_millis(100), Duration::from_millis(300))
    );
    assert_eq!(config.itl, Spread::Fixed(Duration::from_millis(20)));
    assert_eq!(config.output_tokens, Spread::Uniform(10, 20));
    assert_eq!((config.seed, config.model.as_str()), (9, "llama"));
    assert_eq!(
        (config.fault, config.fault_every),
        (Some(Fault::Cut(5)), 10)
    );
}

#[test]
fn bad_values_name_their_flag() {
    let cases: [(&[&str], &str); 6] = [
        (&["--ttft", "soon"], "--ttft"),
        (&["--itl", "9ms..1ms"], "above its end"),
        (&["--output-tokens", "0"], "--output-tokens"),
        (
            &["--fault", "explode"],
            "cut:TOKENS, status:CODE or stall:TOKENS",
        ),
        (&["--fault-every", "0"], "--fault-every"),
        (&["--max-streams", "0"], "--max-streams"),
    ];
    for (args, want) in cases {
        let err = parse(args).unwrap_err();
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let err = parse(&["--host", "localhost"])
        .unwrap()
        .config()
        .unwrap_err();
    assert!(err.contains("--host \"localhost\""), "{err}");
}
