//! The bank's tables on a database server, PostgreSQL or MySQL/MariaDB (`throng serve bank --db
//! URL`), through sqlx's `Any` driver and a pool: the same operations as on SQLite, each one
//! short transaction, so a load on the bank is a load on the server that `--db-stats` can read.

use sqlx::any::AnyPoolOptions;
use sqlx::AnyPool;
use sqlx::{AssertSqlSafe, Row as _};

use super::store::{Order, Refusal};

/// How long the bank waits for a connection to its database: a server that accepts and never
/// answers held `throng serve bank --db` for sqlx's default of 30 s.
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The bank on a server.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    pool: AnyPool,
    mysql: bool,
}

impl Server {
    /// Connects (`connections` at most) and makes the tables if they are missing.
    pub(crate) async fn connect(url: &str, connections: u32) -> Result<Server, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let mysql = url.starts_with("mysql:") || url.starts_with("mariadb:");
        let url = url.replacen("mariadb:", "mysql:", 1);
        let pool = AnyPoolOptions::new()
            .max_connections(connections.max(1))
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect(&url)
            .await?;
        let (id, text) = match mysql {
            true => ("BIGINT AUTO_INCREMENT PRIMARY KEY", "VARCHAR(200)"),
            false => ("BIGSERIAL PRIMARY KEY", "TEXT"),
        };
        for ddl in [
            format!(
                "CREATE TABLE IF NOT EXISTS clients (id {id}, \
                 balance BIGINT NOT NULL CHECK (balance >= 0))"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS orders (id {id}, item {text} NOT NULL, \
                 quantity BIGINT NOT NULL CHECK (quantity > 0), allocated BIGINT NOT NULL DEFAULT 0)"
            ),
        ] {
            sqlx::raw_sql(AssertSqlSafe(ddl)).execute(&pool).await?;
        }
        Ok(Server { pool, mysql })
    }

    /// `$1`, `$2`, ... as the server writes them (MySQL: `?`, in order: every statement here
    /// uses each parameter once, in order).
    fn sql(&self, text: &'static str) -> AssertSqlSafe<String> {
        match self.mysql {
            false => AssertSqlSafe(text.to_string()),
            true => {
                let mut out = String::with_capacity(text.len());
                let mut chars = text.chars().peekable();
                while let Some(c) = chars.next() {
                    if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
                        while chars.peek().is_some_and(char::is_ascii_digit) {
                            chars.next();
                        }
                        out.push('?');
                    } else {
                        out.push(c);
                    }
                }
                AssertSqlSafe(out)
            }
        }
    }

    async fn count(&self, table: &'static str, id: i64) -> Result<bool, sqlx::Error> {
        let sql = match table {
            "clients" => self.sql("SELECT COUNT(*) FROM clients WHERE id = $1"),
            _ => self.sql("SELECT COUNT(*) FROM orders WHERE id = $1"),
        };
        let n: i64 = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(n > 0)
    }

    /// An insert's new id: MySQL reports it, PostgreSQL returns it (`RETURNING id`).
    async fn insert(
        &self,
        mysql: &'static str,
        pg: &'static str,
        args: (&str, i64),
    ) -> Result<i64, Refusal> {
        let (text, n) = args;
        if self.mysql {
            let mut q = sqlx::query(self.sql(mysql));
            if !text.is_empty() {
                q = q.bind(text.to_string());
            }
            let done = q.bind(n).execute(&self.pool).await?;
            return done
                .last_insert_id()
                .ok_or_else(|| Refusal::Invalid("the server gave no id".into()));
        }
        let mut q = sqlx::query_scalar(self.sql(pg));
        if !text.is_empty() {
            q = q.bind(text.to_string());
        }
        Ok(q.bind(n).fetch_one(&self.pool).await?)
    }

    pub(crate) async fn new_client(&self, balance: i64) -> Result<i64, Refusal> {
        self.insert(
            "INSERT INTO clients (balance) VALUES ($1)",
            "INSERT INTO clients (balance) VALUES ($1) RETURNING id",
            ("", balance),
        )
        .await
    }

    pub(crate) async fn balance(&self, id: i64) -> Result<i64, Refusal> {
        sqlx::query_scalar(self.sql("SELECT balance FROM clients WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| Refusal::NotFound(format!("unknown client {id}")))
    }

    pub(crate) async fn total(&self) -> Result<i64, Refusal> {
        let sql = match self.mysql {
            true => "SELECT CAST(COALESCE(SUM(balance), 0) AS SIGNED) FROM clients",
            false => "SELECT CAST(COALESCE(SUM(balance), 0) AS BIGINT) FROM clients",
        };
        Ok(sqlx::query_scalar(self.sql(sql))
            .fetch_one(&self.pool)
            .await?)
    }

    pub(crate) async fn transfer(&self, from: i64, to: i64, amount: i64) -> Result<(), Refusal> {
        let mut tx = self.pool.begin().await?;
        let debited = sqlx::query(
            self.sql("UPDATE clients SET balance = balance - $1 WHERE id = $2 AND balance >= $3"),
        )
        .bind(amount)
        .bind(from)
        .bind(amount)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if debited == 0 {
            tx.rollback().await?;
            return Err(match self.count("clients", from).await? {
                true => Refusal::Conflict(format!("insufficient funds in client {from}")),
                false => Refusal::NotFound(format!("unknown client {from}")),
            });
        }
        let credited = sqlx::query(
            self.sql("UPDATE clients SET balance = balance + $1 WHERE id = $2 AND balance <= $3"),
        )
        .bind(amount)
        .bind(to)
        .bind(i64::MAX - amount)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if credited == 0 {
            tx.rollback().await?;
            return Err(match self.count("clients", to).await? {
                true => Refusal::Conflict(format!("the balance of client {to} would overflow")),
                false => Refusal::NotFound(format!("unknown client {to}")),
            });
        }
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn new_order(&self, item: &str, quantity: i64) -> Result<i64, Refusal> {
        self.insert(
            "INSERT INTO orders (item, quantity) VALUES ($1, $2)",
            "INSERT INTO orders (item, quantity) VALUES ($1, $2) RETURNING id",
            (item, quantity),
        )
        .await
    }

    pub(crate) async fn allocate(&self, id: i64) -> Result<(), Refusal> {
        let changed = sqlx::query(
            self.sql("UPDATE orders SET allocated = 1 WHERE id = $1 AND allocated = 0"),
        )
        .bind(id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(match self.count("orders", id).await? {
                true => Refusal::Conflict(format!("order {id} is already allocated")),
                false => Refusal::NotFound(format!("unknown order {id}")),
            });
        }
        Ok(())
    }

    pub(crate) async fn order(&self, id: i64) -> Result<Order, Refusal> {
        let row =
            sqlx::query(self.sql("SELECT id, item, quantity, allocated FROM orders WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .ok_or_else(|| Refusal::NotFound(format!("unknown order {id}")))?;
        Ok(Order {
            id: row.try_get(0)?,
            item: row.try_get(1)?,
            quantity: row.try_get(2)?,
            allocated: row.try_get::<i64, _>(3)? != 0,
        })
    }
}
