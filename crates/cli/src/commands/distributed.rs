//! `cxrlake scheduler`, `cxrlake executor` and the session `--engine` picks for `cxrlake sql`.

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use cxrlake_distributed::{Engine, ExecutorOptions};
use cxrlake_lake::Lake;
use datafusion::prelude::SessionContext;

use crate::error::{CliError, Result};

/// `cxrlake scheduler`: a Ballista scheduler that plans cxrlake queries.
#[derive(Debug, clap::Args)]
pub struct SchedulerArgs {
    /// Address to listen on (port 0: any free port, printed once listening)
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    pub bind: String,
}

/// `cxrlake executor`: a Ballista executor that runs cxrlake query stages.
#[derive(Debug, clap::Args)]
pub struct ExecutorArgs {
    /// The scheduler to register with
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    pub scheduler: String,
    /// Address its results are served on (Arrow Flight)
    #[arg(long, default_value = "127.0.0.1:50051", value_name = "HOST:PORT")]
    pub bind: String,
    /// Port of its task service [default: the --bind port + 1]
    #[arg(long, value_name = "PORT")]
    pub grpc_port: Option<u16>,
    /// Tasks run at once [default: one per CPU core]
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub slots: usize,
    /// Folder of its shuffle files [default: cxrlake-executor-<port> in the temporary folder]
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// The host name the scheduler reaches it by, when --bind is 0.0.0.0 (in a container:
    /// its service or pod name) [default: the --bind host]
    #[arg(long, value_name = "HOST")]
    pub advertise: Option<String>,
}

/// The one address `text` (`HOST:PORT`) names.
fn address(flag: &str, text: &str) -> Result<SocketAddr> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| CliError::Usage(format!("--{flag} {text}: expected HOST:PORT")))
}

/// Writes one line to `out` at once (a process waiting for it reads it while this one runs).
fn say(out: &mut dyn Write, line: &str) -> Result<()> {
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Output {
            path: PathBuf::from("stdout"),
            source: Box::new(e),
        })
}

impl SchedulerArgs {
    /// Runs the scheduler until the process is stopped; prints `scheduler listening on ADDR`
    /// once clients and executors can connect.
    pub async fn run(&self, storage: &HashMap<String, String>, out: &mut dyn Write) -> Result<()> {
        let bind = address("bind", &self.bind)?;
        let mut said = Ok(());
        cxrlake_distributed::run_scheduler(bind, storage.clone(), |addr| {
            said = say(out, &format!("scheduler listening on {addr}"));
        })
        .await?;
        said
    }
}

impl ExecutorArgs {
    /// Runs the executor until the process is stopped; prints `executor ID registering with
    /// the scheduler at ADDR` once the scheduler answered.
    pub async fn run(&self, storage: &HashMap<String, String>, out: &mut dyn Write) -> Result<()> {
        let bind = address("bind", &self.bind)?;
        let grpc_port = match self.grpc_port {
            Some(port) => port,
            None => bind.port().checked_add(1).ok_or_else(|| {
                CliError::Usage(format!("--bind {}: give --grpc-port too", self.bind))
            })?,
        };
        let options = ExecutorOptions {
            scheduler: address("scheduler", &self.scheduler)?,
            bind,
            grpc_port,
            slots: self.slots,
            work_dir: self.work_dir.clone(),
            advertise: self.advertise.clone(),
            storage: storage.clone(),
        };
        let scheduler = options.scheduler;
        let mut said = Ok(());
        cxrlake_distributed::run_executor(options, |id| {
            said = say(
                out,
                &format!("executor {id} on {bind} registering with the scheduler at {scheduler}"),
            );
        })
        .await?;
        said
    }
}

/// The session `cxrlake sql` queries: the lake's tables and files outside it in this process
/// (`local`), or the lake's tables on a Ballista cluster (the `engine` setting, `--engine`).
pub async fn sql_session(lake: &Lake) -> Result<SessionContext> {
    let engine: Engine = lake.settings().cxrlake.engine.parse()?;
    match engine {
        Engine::Local => Ok(lake.session_with_outside_tables().await?),
        Engine::Ballista { .. } => Ok(engine.session(lake).await?),
    }
}

/// The session `cxrlake stats` runs in: the report's (`qa.answers` narrowed to the fields the
/// statistics read, `cxrlake_report::stats::session`), so both show the same numbers; on a
/// Ballista cluster, the cluster's.
pub async fn stats_session(lake: &Lake) -> Result<SessionContext> {
    let engine: Engine = lake.settings().cxrlake.engine.parse()?;
    match engine {
        Engine::Local => Ok(cxrlake_report::stats::session(lake).await?),
        Engine::Ballista { .. } => Ok(engine.session(lake).await?),
    }
}
