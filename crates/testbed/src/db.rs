//! Throwaway database servers for tests and benchmarks: a PostgreSQL and a MariaDB from the
//! system's packages (Debian: `postgresql`, `mariadb-server`), each in its own temporary
//! directory on a free loopback port, with a user `throng` whose password is `throng-pw` and a
//! database `throng`.
//!
//! A missing binary is an error that says which package to install: a test that needs a
//! database fails loudly rather than skips. Each server is watched by a small shell process
//! that reads its stdin: when the test process ends, however it ends, the pipe closes and the
//! watcher stops the server and removes its directory, so nothing outlives the tests.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The test user's name.
pub const DB_USER: &str = "throng";
/// The test user's password.
pub const DB_PASSWORD: &str = "throng-pw";
/// The test database.
pub const DB_NAME: &str = "throng";

/// Why a database could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct DbError(String);

fn fail(m: impl Into<String>) -> DbError {
    DbError(m.into())
}

fn free_port() -> Result<u16, DbError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| fail(format!("no free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| fail(format!("no free port: {e}")))
}

fn temp_dir(kind: &str) -> Result<PathBuf, DbError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("throng-{kind}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), DbError> {
    let out = cmd
        .output()
        .map_err(|e| fail(format!("{what}: cannot run it: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Waits until `port` accepts TCP connections.
fn wait_port(port: u16, within: Duration, what: &str) -> Result<(), DbError> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(fail(format!(
        "{what} did not listen on port {port} within {within:?}"
    )))
}

/// A watcher: when its stdin closes (this process ended, or [`Watcher`] dropped) it runs
/// `script` with `args`.
struct Watcher {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Watcher {
    fn new(script: &str, args: &[&str]) -> Result<Watcher, DbError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("read _ ; {script}"))
            .arg("sh")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail(format!("cannot start sh: {e}")))?;
        let stdin = child.stdin.take();
        Ok(Watcher { child, stdin })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"\n");
        }
        let _ = self.child.wait();
    }
}

/// Writes a test CA (`ca.crt`) and a server certificate it signed for `127.0.0.1` only
/// (`server.crt`, and its key `server.key`) into `dir`: a client that trusts the CA verifies
/// the chain whatever host name it dialled (PostgreSQL's `verify-ca`), and the name too only
/// when it dialled `127.0.0.1` (`verify-full`; `localhost` fails it). And a client certificate
/// the CA signed for the test user (`client.crt`, `client.key`), for a server that requires
/// one.
fn self_signed(dir: &Path) -> Result<(), DbError> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let err = |e: rcgen::Error| fail(format!("a test certificate: {e}"));
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "throng test CA");
    let ca = ca.self_signed(&ca_key).map_err(err)?;
    let key = KeyPair::generate().map_err(err)?;
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .map_err(err)?
        .signed_by(&key, &ca, &ca_key)
        .map_err(err)?;
    let client_key = KeyPair::generate().map_err(err)?;
    let mut client = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, DB_USER);
    let client = client.signed_by(&client_key, &ca, &ca_key).map_err(err)?;
    std::fs::write(dir.join("client.crt"), client.pem())
        .and_then(|()| std::fs::write(dir.join("client.key"), client_key.serialize_pem()))
        .map_err(|e| fail(e.to_string()))?;
    std::fs::write(dir.join("ca.crt"), ca.pem())
        .and_then(|()| std::fs::write(dir.join("server.crt"), server.pem()))
        .and_then(|()| std::fs::write(dir.join("server.key"), key.serialize_pem()))
        .map_err(|e| fail(e.to_string()))
}

/// A throwaway PostgreSQL. It loads `pg_stat_statements` (`--db-stats` reads statements by
/// kind from it once a test has run `CREATE EXTENSION pg_stat_statements`).
pub struct Postgres {
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
    /// Serving TLS with a self-signed certificate (`server.crt` in its directory).
    tls: bool,
    /// Requiring over TCP a client certificate its CA signed (`clientcert=verify-ca`).
    mutual: bool,
    _watcher: Watcher,
}

fn pg_bin() -> Result<PathBuf, DbError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
        .collect();
    // The newest version: directories are named by major version.
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().ok_or_else(|| {
        fail(
            "PostgreSQL's server binaries (initdb, pg_ctl) are not in /usr/lib/postgresql/*/bin: \
             apt-get install postgresql (scripts/test installs it)",
        )
    })
}

impl Postgres {
    /// Starts a fresh server (a few seconds).
    pub fn start() -> Result<Postgres, DbError> {
        Postgres::launch(false, false)
    }

    /// Starts a fresh server that also serves TLS (`ssl = on`, as Debian's packages ship it),
    /// with a certificate for `127.0.0.1` only, signed by a CA of the test's
    /// ([`Postgres::certificate`]).
    pub fn start_tls() -> Result<Postgres, DbError> {
        Postgres::launch(true, false)
    }

    /// [`Postgres::start_tls`], requiring of every TCP login a client certificate its CA
    /// signed ([`Postgres::client_identity`]) beside the password (mutual TLS:
    /// `ssl_ca_file`, and `clientcert=verify-ca` in `pg_hba.conf`).
    pub fn start_mutual_tls() -> Result<Postgres, DbError> {
        Postgres::launch(true, true)
    }

    fn launch(tls: bool, mutual: bool) -> Result<Postgres, DbError> {
        let bin = pg_bin()?;
        let dir = temp_dir("pg")?;
        let port = free_port()?;
        let d = dir.display().to_string();
        std::fs::write(dir.join("pw"), DB_PASSWORD).map_err(|e| fail(e.to_string()))?;
        // PostgreSQL refuses to run as root: it runs as the `postgres` user then.
        if tls {
            self_signed(&dir)?;
            // PostgreSQL refuses a key others can read.
            run(
                Command::new("chmod").args(["600", &format!("{d}/server.key")]),
                "chmod of the key",
            )?;
        }
        if mutual {
            std::fs::write(
                dir.join("hba.conf"),
                "local all all trust\n\
                 hostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-ca\n",
            )
            .map_err(|e| fail(e.to_string()))?;
        }
        let root = is_root();
        if root {
            run(
                Command::new("chown").args(["-R", "postgres", &d]),
                "chown of the PostgreSQL directory",
            )?;
        }
        let cwd = dir.clone();
        let as_pg = |prog: &Path| {
            let mut c = match root {
                true => {
                    let mut c = Command::new("runuser");
                    c.args(["-u", "postgres", "--"]).arg(prog);
                    c
                }
                false => Command::new(prog),
            };
            c.current_dir(&cwd);
            c
        };
        run(
            as_pg(&bin.join("initdb")).args([
                "-D",
                &format!("{d}/data"),
                "-U",
                DB_USER,
                &format!("--pwfile={d}/pw"),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ]),
            "initdb",
        )?;
        let watcher = Watcher::new(
            match root {
                true => {
                    "runuser -u postgres -- \"$1\" -D \"$2/data\" stop -m immediate; rm -rf \"$2\""
                }
                false => "\"$1\" -D \"$2/data\" stop -m immediate; rm -rf \"$2\"",
            },
            &[&bin.join("pg_ctl").display().to_string(), &d],
        )?;
        let pg = Postgres {
            port,
            dir,
            bin,
            tls,
            mutual,
            _watcher: watcher,
        };
        pg.start_again()?;
        let mut create = as_pg(&pg.bin.join("psql"));
        if !pg.bin.join("psql").exists() {
            create = as_pg(Path::new("psql"));
        }
        run(
            create.args([
                "-h",
                &d,
                "-p",
                &port.to_string(),
                "-U",
                DB_USER,
                "-d",
                "postgres",
                "-c",
                &format!("CREATE DATABASE {DB_NAME}"),
            ]),
            "creating the database",
        )?;
        Ok(pg)
    }

    /// The server this test process shares (started at the first call).
    pub fn shared() -> Result<&'static Postgres, DbError> {
        static PG: OnceLock<Result<Postgres, DbError>> = OnceLock::new();
        PG.get_or_init(Postgres::start)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn pg_ctl(&self, args: &[&str], what: &str) -> Result<(), DbError> {
        let d = self.dir.display().to_string();
        let mut c = match is_root() {
            true => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"])
                    .arg(self.bin.join("pg_ctl"));
                c
            }
            false => Command::new(self.bin.join("pg_ctl")),
        };
        c.current_dir(&self.dir)
            .args(["-D", &format!("{d}/data")])
            .args(args);
        run(&mut c, what)
    }

    /// Starts the server again after [`Postgres::stop`].
    pub fn start_again(&self) -> Result<(), DbError> {
        let d = self.dir.display().to_string();
        let mut opts = format!(
            "-p {} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=300 \
             -c shared_preload_libraries=pg_stat_statements",
            self.port
        );
        if self.tls {
            opts.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
            ));
        }
        if self.mutual {
            opts.push_str(&format!(
                " -c ssl_ca_file={d}/ca.crt -c hba_file={d}/hba.conf"
            ));
        }
        self.pg_ctl(
            &[
                "-o",
                &opts,
                "-l",
                &format!("{d}/log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
            "pg_ctl start",
        )?;
        wait_port(self.port, Duration::from_secs(30), "PostgreSQL")
    }

    /// Stops the server at once (as a crash would).
    pub fn stop(&self) -> Result<(), DbError> {
        self.pg_ctl(&["stop", "-m", "immediate"], "pg_ctl stop")
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for the test user and database.
    pub fn url(&self) -> String {
        format!(
            "postgres://{DB_USER}:{DB_PASSWORD}@127.0.0.1:{}/{DB_NAME}",
            self.port
        )
    }

    /// The CA that signed the certificate it serves TLS with (PEM), for `--cacert`.
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The client certificate and key its CA signed for the test user (PEM files), for
    /// `--cert` and `--key`.
    pub fn client_identity(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("client.crt"), self.dir.join("client.key"))
    }

    /// The directory of its Unix socket (and its binaries' `pgbench`, for benchmarks).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }
}

/// A throwaway MariaDB.
pub struct MariaDb {
    port: u16,
    child: std::sync::Mutex<Option<Child>>,
    dir: PathBuf,
    /// Serving TLS with a self-signed certificate (`server.crt` in its directory).
    tls: bool,
    _watcher: Watcher,
}

fn which(name: &str, dirs: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

impl MariaDb {
    /// Starts a fresh server (a few seconds).
    pub fn start() -> Result<MariaDb, DbError> {
        MariaDb::launch(false)
    }

    /// Starts a fresh server that requires TLS over TCP (`require_secure_transport`), with a
    /// certificate for `127.0.0.1` only, signed by a CA of the test's
    /// ([`MariaDb::certificate`]).
    pub fn start_tls() -> Result<MariaDb, DbError> {
        MariaDb::launch(true)
    }

    fn launch(tls: bool) -> Result<MariaDb, DbError> {
        let missing = || {
            fail(
                "MariaDB's server (mariadb-install-db, mariadbd) is not installed: \
                 apt-get install mariadb-server (scripts/test installs it)",
            )
        };
        let install = which(
            "mariadb-install-db",
            &["/usr/bin", "/usr/local/bin", "/usr/sbin"],
        )
        .ok_or_else(missing)?;
        which("mariadbd", &["/usr/sbin", "/usr/bin", "/usr/local/bin"]).ok_or_else(missing)?;
        let dir = temp_dir("mariadb")?;
        let d = dir.display().to_string();
        let port = free_port()?;
        // Its own directory for temporary tables: in the shared /tmp, another server's (or a
        // test's) clean-up can remove a file the bootstrap is about to delete, failing the install.
        std::fs::create_dir_all(dir.join("tmp")).map_err(|e| fail(e.to_string()))?;
        run(
            Command::new(install).args([
                "--no-defaults",
                &format!("--datadir={d}/data"),
                &format!("--tmpdir={d}/tmp"),
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--user=root",
            ]),
            "mariadb-install-db",
        )?;
        std::fs::write(
            dir.join("init.sql"),
            format!(
                "CREATE DATABASE IF NOT EXISTS {DB_NAME};\n\
                 CREATE USER IF NOT EXISTS '{DB_USER}'@'%' IDENTIFIED BY '{DB_PASSWORD}';\n\
                 GRANT ALL ON *.* TO '{DB_USER}'@'%';\n"
            ),
        )
        .map_err(|e| fail(e.to_string()))?;
        if tls {
            self_signed(&dir)?;
        }
        let db = MariaDb {
            port,
            tls,
            child: std::sync::Mutex::new(None),
            _watcher: Watcher::new(
                "kill -9 $(cat \"$1/pid\") 2>/dev/null; rm -rf \"$1\"",
                &[&d],
            )?,
            dir,
        };
        db.start_again()?;
        Ok(db)
    }

    /// The server this test process shares (started at the first call).
    pub fn shared() -> Result<&'static MariaDb, DbError> {
        static DB: OnceLock<Result<MariaDb, DbError>> = OnceLock::new();
        DB.get_or_init(MariaDb::start)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Starts the server again after [`MariaDb::stop`].
    pub fn start_again(&self) -> Result<(), DbError> {
        let d = self.dir.display().to_string();
        let mariadbd = which("mariadbd", &["/usr/sbin", "/usr/bin", "/usr/local/bin"])
            .ok_or_else(|| fail("mariadbd is missing: apt-get install mariadb-server"))?;
        let tls = match self.tls {
            true => vec![
                format!("--ssl-cert={d}/server.crt"),
                format!("--ssl-key={d}/server.key"),
                // TCP connections must be encrypted (Unix-domain ones need not).
                "--require-secure-transport=ON".to_string(),
            ],
            false => Vec::new(),
        };
        let child = Command::new(mariadbd)
            .args([
                "--no-defaults",
                &format!("--datadir={d}/data"),
                &format!("--tmpdir={d}/tmp"),
                &format!("--socket={d}/sock"),
                &format!("--pid-file={d}/pid"),
                &format!("--port={}", self.port),
                "--bind-address=127.0.0.1",
                "--user=root",
                &format!("--init-file={d}/init.sql"),
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-buffer-pool-size=128M",
                "--max-connections=300",
                "--skip-log-bin",
            ])
            .args(tls)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(self.dir.join("log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .map_err(|e| fail(format!("cannot start mariadbd: {e}")))?;
        if let Ok(mut c) = self.child.lock() {
            *c = Some(child);
        }
        wait_port(self.port, Duration::from_secs(60), "MariaDB").map_err(|e| {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            fail(format!("{e}; its log: {log}"))
        })
    }

    /// Kills the server at once (as a crash would).
    pub fn stop(&self) -> Result<(), DbError> {
        if let Ok(mut c) = self.child.lock() {
            if let Some(mut child) = c.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        Ok(())
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for the test user and database.
    pub fn url(&self) -> String {
        format!(
            "mysql://{DB_USER}:{DB_PASSWORD}@127.0.0.1:{}/{DB_NAME}",
            self.port
        )
    }

    /// Its Unix-domain socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }

    /// The CA that signed the certificate it serves TLS with (PEM), for `--cacert`.
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
