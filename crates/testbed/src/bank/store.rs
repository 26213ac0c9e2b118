//! The bank's tables in SQLite, and every operation on them as one short transaction.

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS clients (
    id INTEGER PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (balance >= 0)
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    item TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    allocated INTEGER NOT NULL DEFAULT 0
);
";

/// Why an operation was refused; the HTTP layer maps each to a status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// The request is malformed or out of range (400).
    #[error("{0}")]
    Invalid(String),
    /// A client or an order does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The state forbids it: insufficient funds, already allocated (409).
    #[error("{0}")]
    Conflict(String),
    /// SQLite failed (500).
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) id: i64,
    pub(crate) item: String,
    pub(crate) quantity: i64,
    pub(crate) allocated: bool,
}

/// Two pools over one database: every write goes through `writer`, which holds a single
/// connection, so writers queue in-process instead of meeting `SQLITE_BUSY`; reads go through
/// `reader`, which for a file in WAL mode has several connections that never block the writer.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    db: Db,
}

/// Where the tables are.
#[derive(Debug, Clone)]
enum Db {
    /// SQLite, in memory or in a file.
    Lite {
        writer: SqlitePool,
        reader: SqlitePool,
    },
    /// A PostgreSQL or MySQL/MariaDB server.
    Server(super::server::Server),
}

impl Store {
    /// A private in-memory database. It lives in one connection, so reads share the writer's
    /// queue and the pool never retires that connection.
    pub(crate) async fn memory() -> Result<Store, sqlx::Error> {
        let options = SqliteConnectOptions::new().in_memory(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::raw_sql(SCHEMA).execute(&writer).await?;
        Ok(Store {
            db: Db::Lite {
                reader: writer.clone(),
                writer,
            },
        })
    }

    /// A database file (created if missing) in WAL mode with `readers` reading connections.
    pub(crate) async fn file(path: &Path, readers: u32) -> Result<Store, sqlx::Error> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            // A backstop only: with one writing connection nothing should wait on a lock.
            .busy_timeout(Duration::from_secs(5));
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::raw_sql(SCHEMA).execute(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(readers.max(1))
            .connect_with(options)
            .await?;
        Ok(Store {
            db: Db::Lite { writer, reader },
        })
    }

    /// The tables on a PostgreSQL or MySQL/MariaDB server, through a pool of `connections`.
    pub(crate) async fn server(url: &str, connections: u32) -> Result<Store, sqlx::Error> {
        Ok(Store {
            db: Db::Server(super::server::Server::connect(url, connections).await?),
        })
    }

    /// SQLite's pools, or the server that does the operation instead.
    fn lite(&self) -> Result<(&SqlitePool, &SqlitePool), &super::server::Server> {
        match &self.db {
            Db::Lite { writer, reader } => Ok((writer, reader)),
            Db::Server(s) => Err(s),
        }
    }

    /// Adds a client with `balance` and returns its id.
    pub(crate) async fn new_client(&self, balance: i64) -> Result<i64, Refusal> {
        if balance < 0 {
            return Err(Refusal::Invalid(format!(
                "balance must not be negative, got {balance}"
            )));
        }
        let (writer, _) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.new_client(balance).await,
        };
        let id = sqlx::query_scalar("INSERT INTO clients (balance) VALUES (?1) RETURNING id")
            .bind(balance)
            .fetch_one(writer)
            .await?;
        Ok(id)
    }

    /// The balance of client `id`.
    pub(crate) async fn balance(&self, id: i64) -> Result<i64, Refusal> {
        let (_, reader) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.balance(id).await,
        };
        sqlx::query_scalar("SELECT balance FROM clients WHERE id = ?1")
            .bind(id)
            .fetch_optional(reader)
            .await?
            .ok_or_else(|| unknown_client(id))
    }

    /// The sum of all balances.
    pub(crate) async fn total(&self) -> Result<i64, Refusal> {
        let (_, reader) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.total().await,
        };
        let total = sqlx::query_scalar("SELECT COALESCE(SUM(balance), 0) FROM clients")
            .fetch_one(reader)
            .await?;
        Ok(total)
    }

    /// Moves `amount` from `from` to `to` in one transaction: both balances change or neither.
    pub(crate) async fn transfer(&self, from: i64, to: i64, amount: i64) -> Result<(), Refusal> {
        if amount <= 0 {
            return Err(Refusal::Invalid(format!(
                "amount must be positive, got {amount}"
            )));
        }
        if from == to {
            return Err(Refusal::Invalid(format!(
                "from and to are the same client ({from})"
            )));
        }
        let (writer, _) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.transfer(from, to, amount).await,
        };
        let mut tx = writer.begin().await?;
        let debited = sqlx::query(
            "UPDATE clients SET balance = balance - ?1 WHERE id = ?2 AND balance >= ?1",
        )
        .bind(amount)
        .bind(from)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if debited == 0 {
            let refusal = match exists(&mut tx, Table::Clients, from).await? {
                true => Refusal::Conflict(format!("insufficient funds in client {from}")),
                false => unknown_client(from),
            };
            tx.rollback().await?;
            return Err(refusal);
        }
        // The bound keeps the sum an integer: SQLite turns an overflowing sum into a float.
        let credited = sqlx::query(
            "UPDATE clients SET balance = balance + ?1 WHERE id = ?2 AND balance <= ?3",
        )
        .bind(amount)
        .bind(to)
        .bind(i64::MAX - amount)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if credited == 0 {
            let refusal = match exists(&mut tx, Table::Clients, to).await? {
                true => Refusal::Conflict(format!("the balance of client {to} would overflow")),
                false => unknown_client(to),
            };
            tx.rollback().await?;
            return Err(refusal);
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records a new order and returns its id.
    pub(crate) async fn new_order(&self, item: &str, quantity: i64) -> Result<i64, Refusal> {
        if item.trim().is_empty() {
            return Err(Refusal::Invalid("item must not be empty".into()));
        }
        if quantity <= 0 {
            return Err(Refusal::Invalid(format!(
                "quantity must be positive, got {quantity}"
            )));
        }
        let (writer, _) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.new_order(item, quantity).await,
        };
        let id =
            sqlx::query_scalar("INSERT INTO orders (item, quantity) VALUES (?1, ?2) RETURNING id")
                .bind(item)
                .bind(quantity)
                .fetch_one(writer)
                .await?;
        Ok(id)
    }

    /// Allocates inventory to order `id`, once.
    pub(crate) async fn allocate(&self, id: i64) -> Result<(), Refusal> {
        let (writer, _) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.allocate(id).await,
        };
        let mut tx = writer.begin().await?;
        let changed =
            sqlx::query("UPDATE orders SET allocated = 1 WHERE id = ?1 AND allocated = 0")
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if changed == 0 {
            let refusal = match exists(&mut tx, Table::Orders, id).await? {
                true => Refusal::Conflict(format!("order {id} is already allocated")),
                false => unknown_order(id),
            };
            tx.rollback().await?;
            return Err(refusal);
        }
        tx.commit().await?;
        Ok(())
    }

    /// Order `id` as stored.
    pub(crate) async fn order(&self, id: i64) -> Result<Order, Refusal> {
        let (_, reader) = match self.lite() {
            Ok(p) => p,
            Err(server) => return server.order(id).await,
        };
        let row: Option<(i64, String, i64, bool)> =
            sqlx::query_as("SELECT id, item, quantity, allocated FROM orders WHERE id = ?1")
                .bind(id)
                .fetch_optional(reader)
                .await?;
        let (id, item, quantity, allocated) = row.ok_or_else(|| unknown_order(id))?;
        Ok(Order {
            id,
            item,
            quantity,
            allocated,
        })
    }
}

/// The tables whose rows a refusal has to tell apart: missing or in the wrong state.
#[derive(Debug, Clone, Copy)]
enum Table {
    Clients,
    Orders,
}

/// Whether row `id` exists in `table`.
async fn exists(
    tx: &mut sqlx::SqliteTransaction<'_>,
    table: Table,
    id: i64,
) -> Result<bool, sqlx::Error> {
    let sql = match table {
        Table::Clients => "SELECT EXISTS (SELECT 1 FROM clients WHERE id = ?1)",
        Table::Orders => "SELECT EXISTS (SELECT 1 FROM orders WHERE id = ?1)",
    };
    sqlx::query_scalar(sql).bind(id).fetch_one(&mut **tx).await
}

fn unknown_client(id: i64) -> Refusal {
    Refusal::NotFound(format!("unknown client {id}"))
}

fn unknown_order(id: i64) -> Refusal {
    Refusal::NotFound(format!("unknown order {id}"))
}
