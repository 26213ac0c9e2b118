//! Scenario files of several flows picked by weight, against the testbed: the shares hold, a
//! seed repeats a run exactly, and each flow keeps its groups' and steps' rows.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use throng::core::Snapshot;
use throng::testbed::{BankService, HttpTarget};

use common::samples as row;

const MIX: &str = r#"
targets:
  web: URL
flows:
  - flow: browse
    weight: 70
    steps:
      - label: home
        request: { path: /home }
  - flow: search
    weight: 20
    steps:
      - label: find
        request: { path: /find }
  - flow: buy
    weight: 10
    steps:
      - label: cart
        request: { path: /cart }
      - group: checkout
        steps:
          - label: pay
            request: { method: POST, path: /pay }
          - label: confirm
            request: { path: /confirm }
"#;

async fn mix(args: &[&str]) -> std::sync::Arc<Snapshot> {
    let target = HttpTarget::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mix.yaml");
    std::fs::write(&file, MIX.replace("URL", &target.url())).unwrap();
    // 4 users of 2,500 iterations: 10,000 picks.
    let mut all = vec!["-c", "4", "-i", "2500"];
    all.extend_from_slice(args);
    let s = common::run_file(&file, &all).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    s
}

#[tokio::test]
async fn each_iteration_runs_one_flow_picked_by_weight() {
    let s = mix(&[]).await;
    let (browse, search, buy) = (row(&s, "browse"), row(&s, "search"), row(&s, "buy"));
    assert_eq!(browse + search + buy, 10_000);
    // Within 2.5 points of 70/20/10 (more than five standard deviations of each share).
    for (n, share) in [(browse, 7000), (search, 2000), (buy, 1000)] {
        assert!(n.abs_diff(share) <= 250, "{browse} {search} {buy}");
    }
    // Each flow's steps and groups keep their rows, and run only in their flow's iterations.
    assert_eq!(row(&s, "home"), browse);
    assert_eq!(row(&s, "find"), search);
    for step in ["cart", "pay", "confirm", "checkout"] {
        assert_eq!(row(&s, step), buy, "{step}");
    }
    assert_eq!(s.total.samples, browse + search + 3 * buy);
}

#[tokio::test]
async fn a_seed_repeats_the_picks_exactly() {
    let counts = |s: std::sync::Arc<Snapshot>| ["browse", "search", "buy"].map(|f| row(&s, f));
    let a = counts(mix(&["--seed", "7"]).await);
    let b = counts(mix(&["--seed", "7"]).await);
    let c = counts(mix(&["--seed", "8"]).await);
    assert_eq!(a, b, "the same seed, the same flows");
    assert_ne!(a, c, "another seed, other flows");
}

#[tokio::test]
async fn the_bundled_mix_runs_against_the_bank() {
    let bank = BankService::default().start().await.unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/shop-mix.yaml");
    let target = format!("shop={}", bank.url());
    let s = common::run_file(&path, &["--target", &target, "-c", "2", "-i", "100"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "browse") + row(&s, "search") + row(&s, "buy"), 200);
    assert_eq!(row(&s, "checkout"), row(&s, "buy"));
    assert_eq!(bank.server_errors(), 0);
}

#[tokio::test]
async fn files_after_at_weights_are_a_mix() {
    let target = HttpTarget::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = target.url();
    let browse = dir.path().join("browse.yaml");
    let buy = dir.path().join("buy.yaml");
    let step = |label: &str| {
        format!("targets: {{ web: {url} }}\nsteps:\n  - label: {label}\n    request: {{ path: /{label} }}\n")
    };
    std::fs::write(&browse, step("home")).unwrap();
    std::fs::write(&buy, step("pay")).unwrap();
    let (a, b) = (
        format!("{}@7", browse.display()),
        format!("{}@3", buy.display()),
    );
    let s = common::run_file(std::path::Path::new(&a), &[&b, "-c", "4", "-i", "2500"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let (home, pay) = (row(&s, "browse"), row(&s, "buy"));
    assert_eq!(home + pay, 10_000);
    assert!(home.abs_diff(7000) <= 250, "{home} {pay}");
    assert_eq!((row(&s, "home"), row(&s, "pay")), (home, pay));
}
