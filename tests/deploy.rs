//! The deployments in `deploy/`: the Kubernetes manifest (no cluster is reachable here, so it is
//! read and checked for what throng relies on) and the Swarm script (run for real in
//! `tests/swarm.rs`).

use serde_json::Value;

#[test]
fn the_indexed_job_gives_each_pod_its_shard_and_prints_results() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/indexed-job.yaml"
    );
    let text = std::fs::read_to_string(path).expect("the manifest");
    let job: Value = serde_saphyr::from_str(&text).expect("valid YAML");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    // Indexed: each pod has JOB_COMPLETION_INDEX (from 0), which --shards reads.
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(
        spec["parallelism"].as_u64(),
        Some(n),
        "every shard runs at once"
    );
    let c = &spec["template"]["spec"]["containers"][0];
    let args: Vec<&str> = c["command"]
        .as_array()
        .expect("a command")
        .iter()
        .map(|v| v.as_str().expect("strings"))
        .collect();
    let after = |flag: &str| {
        args.iter()
            .position(|a| *a == flag)
            .map(|i| args[i + 1])
            .unwrap_or_else(|| panic!("{flag} missing: {args:?}"))
    };
    assert_eq!(
        after("--shards"),
        n.to_string(),
        "as many shards as completions"
    );
    assert_eq!(after("--json"), "-", "results on stdout, for kubectl logs");
    assert_eq!(
        after("--start-at"),
        "START_AT",
        "the README's sed fills it in"
    );
    assert_eq!(args[1], "run");
    // The plan comes from the ConfigMap mounted where the command reads it.
    let mount = c["volumeMounts"][0]["mountPath"].as_str().expect("a mount");
    assert!(args[2].starts_with(mount), "{} under {mount}", args[2]);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    // The command line parses as throng's own (with a start time in place).
    let mut argv: Vec<String> = vec!["throng".into()];
    argv.extend(
        args[1..]
            .iter()
            .map(|a| a.replace("START_AT", "2030-01-01T00:00:00Z")),
    );
    assert_eq!(argv[1], "run", "{argv:?}");
    let run = crate::common::parse(&argv).expect("parses");
    let shard = run
        .run
        .shard(&|k| (k == "JOB_COMPLETION_INDEX").then(|| (n - 1).to_string()))
        .expect("the last pod's index is a shard");
    assert_eq!((shard.index as u64, shard.count as u64), (n - 1, n));
}
