//! The JSON result is a contract: `schema.json` is generated from the result types and checked
//! in, and real output of a real run validates against it.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::process::Command;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema.json")
}

/// The checked-in schema of a run's result.
fn schema() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap()
}

/// Where a run's result breaks the checked-in schema, an error each; empty when it holds.
pub(crate) fn invalid(result: &serde_json::Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    validator
        .iter_errors(result)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

#[test]
fn checked_in_schemas_are_current() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (file, generated) in [
        ("schema.json", throng::report::schema()),
        ("schema-grid.json", throng::report::grid_schema()),
    ] {
        let generated = generated.expect("the schema serialises");
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(root.join(file), &generated).unwrap();
        }
        let checked_in = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{file} is out of date with the result types: run `UPDATE_SCHEMA=1 cargo test --test http schema` and commit it"
        );
    }
}

#[test]
fn real_output_validates_against_the_schema() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let target = rt
        .block_on(throng::testbed::HttpTarget::default().start())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run",
            &format!("{}/", target.url()),
            "-q",
            "200",
            "-z",
            "2s",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = invalid(&result);
    assert!(errors.is_empty(), "{errors:#?}");
    let validator = jsonschema::validator_for(&schema()).unwrap();
    // And the schema is not vacuous: a result missing its totals fails.
    let mut broken = result.clone();
    broken.as_object_mut().unwrap().remove("total");
    assert!(!validator.is_valid(&broken));
    assert_eq!(result["schema_version"], 4);
    // Every arrival of the schedule is accounted for: 200/s for 2 s is exactly 400.
    let o = &result["open_loop"];
    assert_eq!(o["scheduled"], 400);
    let parts = ["started", "dropped", "unstarted"].map(|k| o[k].as_u64().unwrap());
    assert_eq!(parts.iter().sum::<u64>(), 400, "{o}");
    assert!(result["total"]["samples"].as_u64().unwrap() >= 390);
}
