//! A throwaway PostgreSQL cluster for tests: `initdb` in a temp dir, `pg_ctl start` on a free
//! loopback port with the socket in the same dir, `pg_ctl stop` on drop.
//!
//! The binaries are looked up in `$YARDSTICK_PG_BIN` (when set, the only place looked), else
//! `/usr/lib/postgresql/<newest>/bin` (Debian/Ubuntu), then `PATH`. When none is found,
//! `PgCluster::start` goes through `external::require`: a failure under
//! `YARDSTICK_REQUIRE_EXTERNAL=1`, else a visible `SKIPPED:` line and `None`. PostgreSQL
//! refuses to run as root, so as root the cluster runs as the `postgres` user when it exists
//! (the Debian package creates it), else as a `yardstick-test` system user created with
//! `useradd`, through `runuser`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running cluster; stopped (immediately) and deleted on drop.
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    user: Option<String>,
    /// Loopback port.
    pub port: u16,
}

fn find_bin() -> Option<PathBuf> {
    // When set, only it (a wrong directory hides PostgreSQL instead of falling back).
    if let Some(p) = std::env::var_os("YARDSTICK_PG_BIN") {
        let p = PathBuf::from(p);
        return p.join("initdb").is_file().then_some(p);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn user_exists(name: &str) -> bool {
    Command::new("id")
        .arg("-u")
        .arg(name)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The non-root user to run the server as, creating `yardstick-test` when needed.
fn service_user() -> String {
    for u in ["postgres", "yardstick-test"] {
        if user_exists(u) {
            return u.into();
        }
    }
    let out = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
        ])
        .arg("yardstick-test")
        .output()
        .expect("useradd runs");
    // Another test may have created it at the same moment.
    assert!(
        out.status.success() || user_exists("yardstick-test"),
        "useradd yardstick-test failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    "yardstick-test".into()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl PgCluster {
    /// Starts a cluster, or (PostgreSQL absent) fails under `YARDSTICK_REQUIRE_EXTERNAL=1` or
    /// prints `SKIPPED: …` and returns `None`.
    pub fn start(test: &str) -> Option<PgCluster> {
        let bin = crate::external::require(
            "postgresql",
            test,
            "looked in $YARDSTICK_PG_BIN, /usr/lib/postgresql/*/bin and PATH; install it with \
             `apt-get install -y postgresql`",
            find_bin(),
        )?;
        let user = is_root().then(service_user);
        let dir = tempfile::Builder::new()
            .prefix("ys-pg-")
            .tempdir_in("/tmp") // short: the socket path must stay under 108 bytes
            .unwrap();
        let mut c = PgCluster {
            dir,
            bin,
            user,
            port: 0,
        };
        if let Some(u) = &c.user {
            let out = Command::new("chown")
                .arg(u)
                .arg(c.dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "chown: {out:?}");
        }
        let data = c.data();
        c.pg(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "yardstick",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        // The port is free when picked; another process may take it before the server binds,
        // so a failed start tries a new one.
        for attempt in 0..3 {
            c.port = free_port();
            let opts = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c full_page_writes=off",
                c.port,
                c.dir.path().display()
            );
            let log = c.dir.path().join("server.log");
            let out = c.run(
                "pg_ctl",
                &[
                    "-D",
                    data.to_str().unwrap(),
                    "-l",
                    log.to_str().unwrap(),
                    "-o",
                    &opts,
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
            );
            if out.status.success() {
                return Some(c);
            }
            let server_log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                attempt < 2,
                "pg_ctl start failed: {}\n{}\n{server_log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        unreachable!()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut cmd = match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(args).current_dir(self.dir.path());
        cmd.output().unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        let out = self.run(tool, args);
        assert!(
            out.status.success(),
            "{tool} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The URL of database `db` (which [`PgCluster::create_db`] makes).
    pub fn url(&self, db: &str) -> String {
        format!("postgresql://yardstick@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates an empty database and returns its URL.
    pub fn create_db(&self, db: &str) -> String {
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE \"{db}\""))
            .unwrap();
        self.url(db)
    }

    /// Creates an empty database owned by `role`, a login role that is not a superuser (made
    /// when missing) — the role docs/warehouse.md recommends for a shared warehouse — and
    /// returns its URL as that role.
    pub fn create_owned_db(&self, db: &str, role: &str) -> String {
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        c.batch_execute(&format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN \
             CREATE ROLE \"{role}\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE; END IF; END $$"
        ))
        .unwrap();
        // Not in the same batch: CREATE DATABASE cannot run inside a transaction block.
        c.batch_execute(&format!("CREATE DATABASE \"{db}\" OWNER \"{role}\""))
            .unwrap();
        format!("postgresql://{role}@127.0.0.1:{}/{db}", self.port)
    }

    /// The data directory's parent (holds the server log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }
}
