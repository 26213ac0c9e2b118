//! The saga report's table from one command of `scenarios/published/README.md`, against a real
//! MariaDB: its configurations (a saga of autocommit steps, the same steps in one local
//! transaction, try-confirm, and sysbench's oltp_write_only as the baseline) as sides, each a
//! scenario file, and their Global-TPS, DB-TPS and OPS (with and without BEGIN/COMMIT) as rows.
//! The database's transactions are its own count: three, one, two and one a global.

use crate::common;

use throng::testbed::MariaDb;

use common::{said as text, throng_bin as throng};

const SAGA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/published/saga");

fn ok(args: &[&str]) -> String {
    let o = throng(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    text(&o)
}

#[test]
fn a_sagas_global_tps_db_tps_and_ops_against_sysbench_in_one_table() {
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    let url = my.url();
    // The README's set-up: the flows' tables, their stock, sysbench's table.
    let one = ["-i", "1", "-c", "1", "--no-tui", "--quiet"];
    let tables = format!("{SAGA}/tables.sql");
    ok(&[&["run", &url, "--sql-file", &tables][..], &one].concat());
    let stock = "INSERT IGNORE INTO stock (item, qty) SELECT seq, 1000000 FROM seq_1_to_100";
    ok(&[&["run", &url, "--sql", stock][..], &one].concat());
    ok(&["sql", "prepare", &url, "--table-size", "10000"]);

    let dir = tempfile::tempdir().expect("a temp dir");
    let (json, md) = (dir.path().join("saga.json"), dir.path().join("saga.md"));
    let side = |name: &str| format!("{name}={SAGA}/{name}.yaml");
    ok(&[
        "run",
        &format!("{SAGA}/saga.yaml"),
        "--target",
        &side("saga"),
        "--target",
        &side("at"),
        "--target",
        &side("tcc"),
        "--target",
        &side("sysbench"),
        "--target",
        &format!("db={url}"),
        "--db-stats",
        &url,
        "-c",
        "2",
        "-i",
        "20",
        "--no-tui",
        "--quiet",
        "--json",
        &json.display().to_string(),
        "--report",
        &format!("markdown:{}", md.display()),
    ]);
    let md = std::fs::read_to_string(md).expect("markdown");
    let line = |figure: &str| -> Vec<String> {
        md.lines()
            .find(|l| l.starts_with(&format!("| {figure} |")))
            .unwrap_or_else(|| panic!("no row {figure}: {md}"))
            .trim_matches('|')
            .split('|')
            .skip(1)
            .map(|c| c.trim().to_string())
            .collect()
    };
    assert_eq!(line("Figure"), ["saga", "at", "tcc", "sysbench"], "{md}");
    let cells = |figure: &str| -> Vec<f64> {
        line(figure)
            .iter()
            .map(|c| c.parse().unwrap_or_else(|_| panic!("{figure}: {c}")))
            .collect()
    };
    let global = cells("Global-TPS: global passes/s");
    let db_tps = cells("DB-TPS: transactions/s");
    let ops = cells("OPS: statements/s, BEGIN/COMMIT included");
    let dml = cells("OPS: SELECT+INSERT+UPDATE+DELETE/s");
    assert!(global.iter().all(|g| *g > 0.0), "{md}");
    // The database's transactions a global: each saga step its own, one local transaction,
    // try and confirm, sysbench's one.
    let per_global = ["3.00", "1.00", "2.00", "1.00"];
    assert_eq!(line("DB transactions per global pass"), per_global, "{md}");
    for (i, k) in [3.0, 1.0, 2.0, 1.0].into_iter().enumerate() {
        assert!((db_tps[i] - k * global[i]).abs() <= 0.1 * k, "{i}: {md}");
    }
    // BEGIN and COMMIT are statements in one OPS and not in the other: none in the saga, two
    // of five in the local transaction.
    assert!(ops[0] > dml[0] && ops[0] < dml[0] * 1.1, "{md}");
    assert!((ops[1] / dml[1] - 5.0 / 3.0).abs() < 0.1, "{md}");

    // The result's totals are the database's own count, exactly: 40 globals a side.
    let g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the result")).expect("JSON");
    let runs = g["runs"].as_array().expect("runs");
    for (run, (side, transactions, dml)) in runs.iter().zip([
        ("saga", 120, 120),
        ("at", 40, 120),
        ("tcc", 80, 160),
        ("sysbench", 40, 160),
    ]) {
        assert_eq!(run["side"], side);
        let db = &run["result"]["databases"][0];
        assert_eq!(
            db["transactions"]["load_total"], transactions,
            "{side}: {db}"
        );
        assert_eq!(db["flows"][0]["completed"], 40, "{side}: {db}");
        let kinds: u64 = db["statements_by_kind"]
            .as_array()
            .expect("by kind")
            .iter()
            .filter_map(|k| k["load_total"].as_u64())
            .sum();
        assert_eq!(kinds, dml, "{side}: {db}");
    }
}
