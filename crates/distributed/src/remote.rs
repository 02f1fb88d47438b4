//! Where queries run ([`Engine`]) and the session of a client of a Ballista cluster.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use cxrlake_lake::Lake;
use datafusion::execution::{FunctionRegistry, SessionState, SessionStateBuilder};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

use crate::codec::{CxrlakeLogicalCodec, CxrlakePhysicalCodec};
use crate::error::{DistributedError, Result};

/// Where a command's queries run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// In this process (DataFusion).
    Local,
    /// On the Ballista cluster whose scheduler listens at `host:port`.
    Ballista {
        /// The scheduler's host name or address.
        host: String,
        /// The scheduler's port.
        port: u16,
    },
}

impl FromStr for Engine {
    type Err = DistributedError;

    fn from_str(value: &str) -> Result<Self> {
        let bad = |why: &str| DistributedError::Engine {
            value: value.to_string(),
            why: why.to_string(),
        };
        if value.is_empty() || value == "local" {
            return Ok(Self::Local);
        }
        let address = value
            .strip_prefix("ballista://")
            .ok_or_else(|| bad("expected `local` or `ballista://HOST:PORT`"))?
            .trim_end_matches('/');
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| bad("the scheduler's port is missing"))?;
        let port = port
            .parse()
            .map_err(|_| bad("the scheduler's port is not a number"))?;
        if host.is_empty() {
            return Err(bad("the scheduler's host is missing"));
        }
        Ok(Self::Ballista {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        })
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local => write!(f, "local"),
            Self::Ballista { host, port } => write!(f, "ballista://{}", authority(host, *port)),
        }
    }
}

/// `host:port`, with an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl Engine {
    /// The scheduler's socket address.
    fn scheduler(host: &str, port: u16) -> Result<SocketAddr> {
        (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| DistributedError::unreachable(authority(host, port), "no address"))
    }

    /// The lake's session (every table registered) on this engine: for Ballista, a client of
    /// the cluster whose queries are planned by the scheduler and run on its executors.
    pub async fn session(&self, lake: &Lake) -> Result<SessionContext> {
        let ctx = lake.session().await?;
        match self {
            Self::Local => Ok(ctx),
            Self::Ballista { .. } => self.connect(ctx.state()).await,
        }
    }

    /// A context over `state` (a cxrlake session: its tables, functions and settings) whose
    /// queries run on this engine.
    pub async fn connect(&self, state: SessionState) -> Result<SessionContext> {
        let (host, port) = match self {
            Self::Local => return Ok(SessionContext::new_with_state(state)),
            Self::Ballista { host, port } => (host, *port),
        };
        let scheduler = Self::scheduler(host, port)?;
        // The session's own functions (a stage's, from their recipes) outlive the upgrade below.
        let functions: Vec<Arc<ScalarUDF>> = state.scalar_functions().values().cloned().collect();
        // Ballista connects only when the first query runs and then waits: fail at once.
        tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(scheduler),
        )
        .await
        .map_err(|_| DistributedError::unreachable(authority(host, port), "timed out"))?
        .map_err(|e| DistributedError::unreachable(authority(host, port), e))?;
        let config = state
            .config()
            .clone()
            // Ballista's restrictions (no dynamic filters across stages, …) first: setting a
            // Ballista option below marks the config as upgraded, and they would be skipped.
            .upgrade_for_ballista()
            // The session's tables are in the default catalog: keep it.
            .with_create_default_catalog_and_schema(false)
            .with_ballista_logical_extension_codec(Arc::new(CxrlakeLogicalCodec::default()))
            .with_ballista_physical_extension_codec(Arc::new(CxrlakePhysicalCodec::default()))
            // Ballista's adaptive planner optimizes with its own list of physical rules, without
            // cxrlake's (the zero-copy unnest): the static planner uses the session's.
            .with_ballista_adaptive_query_planner(false);
        let state = SessionStateBuilder::new_from_existing(state)
            .with_config(config)
            .build();
        let ctx =
            SessionContext::remote_with_state(&format!("df://{}", authority(host, port)), state)
                .await?;
        // Ballista's upgrade of the session sets DataFusion's function lists: cxrlake's again,
        // and the session's own.
        cxrlake_udfs::register_all(&ctx);
        for function in functions {
            if ctx.udf(function.name()).is_err() {
                ctx.register_udf(function.as_ref().clone());
            }
        }
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_engines() -> Result<()> {
        assert_eq!("local".parse::<Engine>()?, Engine::Local);
        assert_eq!(
            "ballista://127.0.0.1:50050".parse::<Engine>()?,
            Engine::Ballista {
                host: "127.0.0.1".into(),
                port: 50050
            }
        );
        assert_eq!(
            "ballista://scheduler:7/".parse::<Engine>()?.to_string(),
            "ballista://scheduler:7"
        );
        assert_eq!(
            "ballista://[::1]:50050".parse::<Engine>()?.to_string(),
            "ballista://[::1]:50050"
        );
        for bad in [
            "spark://x:1",
            "ballista://x",
            "ballista://:1",
            "ballista://x:port",
        ] {
            assert!(bad.parse::<Engine>().is_err(), "{bad} parsed");
        }
        Ok(())
    }
}
