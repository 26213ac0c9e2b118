//! The testbed's settings as flags write them, and a prompts file read from disk.

use std::time::Duration;

use throng_llm::serve::{Fault, Spread};
use throng_llm::{read_prompts_file, Api, PromptError};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn spreads_of_durations_and_counts_parse() {
    assert_eq!("50ms".parse(), Ok(Spread::Fixed(ms(50))));
    assert_eq!("20ms..80ms".parse(), Ok(Spread::Uniform(ms(20), ms(80))));
    assert_eq!(
        "1s".parse::<Spread<Duration>>().map(|s| s.bounds()),
        Ok((ms(1000), ms(1000)))
    );
    assert_eq!("128".parse(), Ok(Spread::Fixed(128u32)));
    assert_eq!("64..256".parse(), Ok(Spread::Uniform(64u32, 256)));
    for (bad, want) in [
        ("80ms..20ms", "start is above its end"),
        ("fast", "`fast` is not a duration"),
        ("10ms..x", "`x` is not a duration"),
        ("10..20ms", "`10` is not a duration (time unit needed"),
    ] {
        let err = bad.parse::<Spread<Duration>>().unwrap_err();
        assert!(err.contains(want), "{bad}: {err}");
    }
    for (bad, want) in [
        ("0", "`0` is not a count"),
        ("5..2", "above its end"),
        ("1.5", "`1.5`"),
    ] {
        let err = bad.parse::<Spread<u32>>().unwrap_err();
        assert!(err.contains(want), "{bad}: {err}");
    }
}

#[test]
fn draws_stay_within_a_range_and_repeat_with_the_seed() {
    use rand::SeedableRng;
    let spread: Spread<u32> = "10..20".parse().unwrap();
    let draw = |seed| {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        (0..200).map(|_| spread.draw(&mut rng)).collect::<Vec<_>>()
    };
    let a = draw(1);
    assert!(a.iter().all(|n| (10..=20).contains(n)));
    assert!(a.contains(&10) && a.contains(&20), "both ends can be drawn");
    assert_eq!(a, draw(1));
    assert_ne!(a, draw(2));
}

#[test]
fn faults_parse() {
    assert_eq!("cut:3".parse(), Ok(Fault::Cut(3)));
    assert_eq!("stall:0".parse(), Ok(Fault::Stall(0)));
    assert_eq!("status:503".parse(), Ok(Fault::Status(503)));
    let err = "status:200".parse::<Fault>().unwrap_err();
    assert!(err.contains("400 to 599"), "{err}");
    for bad in ["cut", "cut:x", "reset:1", ""] {
        let err = bad.parse::<Fault>().unwrap_err();
        assert!(
            err.contains("cut:TOKENS, status:CODE or stall:TOKENS"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn a_prompts_file_is_read_from_disk_and_a_missing_one_named() {
    let path =
        std::env::temp_dir().join(format!("throng-llm-prompts-{}.jsonl", std::process::id()));
    std::fs::write(
        &path,
        "{\"prompt\": \"one\"}\n{\"prompt\": \"two\", \"max_tokens\": 3}\n",
    )
    .unwrap();
    let prompts = read_prompts_file(&path, Api::Completions);
    std::fs::remove_file(&path).unwrap();
    let prompts = prompts.unwrap();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[1].max_tokens, Some(3));
    let missing = std::env::temp_dir().join("throng-llm-no-such-file.jsonl");
    let err = read_prompts_file(&missing, Api::Chat).unwrap_err();
    assert!(matches!(err, PromptError::Io { .. }));
    assert!(
        err.to_string().starts_with(&missing.display().to_string()),
        "{err}"
    );
}
