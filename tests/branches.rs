//! Branches and loops in scenario files, against the bank: `when:` skips, `repeat:` and
//! `until:` loop (bounded), `on_failure:` per step; each counted on its rows.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use throng::core::Snapshot;
use throng::testbed::BankService;

use common::samples as row;

async fn run(text: &str, args: &[&str]) -> std::sync::Arc<Snapshot> {
    let bank = BankService::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.yaml");
    std::fs::write(&file, text.replace("URL", &bank.url())).unwrap();
    common::run_file(&file, args).await
}

#[tokio::test]
async fn when_skips_a_step_or_a_group_whose_condition_is_false() {
    let s = run(
        r#"
targets: { bank: URL }
steps:
  - label: every
    request: { path: /total }
  - label: even
    when: "{{ iteration % 2 == 0 }}"
    request: { path: /total }
  - group: odd
    when: "{{ iteration % 2 == 1 }}"
    steps:
      - label: first
        request: { path: /total }
      - label: skipped
        when: "{{ false }}"
        request: { path: /total }
  - label: after
    request: { path: /total }
"#,
        &["-c", "2", "-i", "10"],
    )
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "every"), 20);
    assert_eq!(row(&s, "even"), 10);
    assert_eq!(row(&s, "first"), 10);
    assert_eq!(
        row(&s, "odd"),
        10,
        "a group whose last step is skipped still ends its pass"
    );
    assert_eq!(row(&s, "skipped"), 0);
    assert_eq!(row(&s, "after"), 20);
}

#[tokio::test]
async fn repeat_runs_a_step_or_a_group_n_times() {
    let s = run(
        r#"
targets: { bank: URL }
steps:
  - label: thrice
    repeat: 3
    request: { path: /total }
  - group: twice
    repeat: 2
    steps:
      - label: a
        request: { path: /total }
      - label: b
        request: { path: /total }
"#,
        &["-c", "2", "-i", "5"],
    )
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "thrice"), 30);
    assert_eq!((row(&s, "a"), row(&s, "b")), (20, 20));
    assert_eq!(
        row(&s, "twice"),
        20,
        "each pass through the group is a row sample"
    );
}

#[tokio::test]
async fn until_repeats_until_the_condition_holds_within_its_bound() {
    // The bank numbers orders 1, 2, 3, ...: one user orders until it holds order 5.
    let s = run(
        r#"
targets: { bank: URL }
steps:
  - label: order
    repeat: 100
    until: "{{ order >= 5 }}"
    request: { method: POST, path: /order, json: { item: x, quantity: 1 } }
    extract: { order: { jsonpath: $.order_id } }
  - label: bounded
    repeat: 3
    until: "{{ false }}"
    request: { path: /total }
"#,
        &["-c", "1", "-i", "1"],
    )
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "order"), 5);
    assert_eq!(
        row(&s, "bounded"),
        3,
        "repeat bounds an until that never holds"
    );
}

#[tokio::test]
async fn on_failure_per_step_lets_the_iteration_go_on() {
    let s = run(
        r#"
targets: { bank: URL }
steps:
  - label: missing
    on_failure: continue
    request: { path: /nothing }
  - label: next
    request: { path: /total }
  - label: missing again
    request: { path: /nothing }
  - label: never
    request: { path: /total }
"#,
        &["-c", "1", "-i", "4"],
    )
    .await;
    assert_eq!(row(&s, "missing"), 4);
    assert_eq!(
        row(&s, "next"),
        4,
        "on_failure: continue goes on to the next step"
    );
    assert_eq!(row(&s, "missing again"), 4);
    assert_eq!(row(&s, "never"), 0, "the file's default skips the rest");
    assert_eq!(s.total.errors, 8);
}
