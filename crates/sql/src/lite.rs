//! SQLite on sqlx's concrete connection: statements, scripts and kept rows as JSON.

use std::sync::Arc;

use futures_util::TryStreamExt as _;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{AssertSqlSafe, Column as _, Either, Executor as _, Row as _, TypeInfo as _};
use sqlx::{SqlSafeStr as _, Statement as _};

use crate::conn::Done;
use crate::param::Value;

/// Runs one statement (prepared at its first use, then from sqlx's statement cache) with its
/// parameters; `keep` keeps the rows as JSON.
pub(crate) async fn run(
    c: &mut SqliteConnection,
    sql: &Arc<str>,
    args: &[Value],
    keep: bool,
) -> Result<Done, sqlx::Error> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
    for a in args {
        q = match a {
            Value::Null => q.bind(None::<i64>),
            Value::Int(n) => q.bind(*n),
            Value::Float(x) => q.bind(*x),
            Value::Text(s) => q.bind(s.as_str()),
            Value::Bool(b) => q.bind(*b),
        };
    }
    let mut done = Done::default();
    let mut stream = c.fetch_many(q);
    while let Some(item) = stream.try_next().await? {
        match item {
            Either::Left(r) => done.affected += r.rows_affected(),
            Either::Right(row) => {
                done.rows += 1;
                if keep {
                    done.data.push(json(&row));
                }
            }
        }
    }
    Ok(done)
}

/// Runs text as it is (scripts of several statements).
pub(crate) async fn raw(c: &mut SqliteConnection, sql: &str) -> Result<(), sqlx::Error> {
    c.execute(sqlx::raw_sql(AssertSqlSafe(sql.to_string())))
        .await
        .map(drop)
}

/// Prepares a statement and says how many parameters it takes.
pub(crate) async fn parameters(c: &mut SqliteConnection, sql: &str) -> Result<usize, sqlx::Error> {
    let st = c
        .prepare(AssertSqlSafe(sql.to_string()).into_sql_str())
        .await?;
    Ok(match st.parameters() {
        Some(Either::Left(types)) => types.len(),
        Some(Either::Right(n)) => n,
        None => 0,
    })
}

/// A row as a JSON object: integers, reals, text and booleans; other types say to cast them.
fn json(row: &SqliteRow) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (i, c) in row.columns().iter().enumerate() {
        m.insert(c.name().to_string(), cell(row, i));
    }
    serde_json::Value::Object(m)
}

fn cell(row: &SqliteRow, i: usize) -> serde_json::Value {
    use serde_json::Value as J;
    if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
        return v.map_or(J::Null, |n| J::Number(n.into()));
    }
    if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
        return v
            .and_then(serde_json::Number::from_f64)
            .map_or(J::Null, J::Number);
    }
    if let Ok(v) = row.try_get::<Option<String>, _>(i) {
        return v.map_or(J::Null, J::String);
    }
    if let Ok(v) = row.try_get::<Option<bool>, _>(i) {
        return v.map_or(J::Null, J::Bool);
    }
    J::String(format!(
        "<{}: cast it to text in the query>",
        row.column(i).type_info().name()
    ))
}
