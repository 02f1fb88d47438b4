//! A Ballista scheduler and executors that speak cxrlake: its codecs, and its session
//! (functions, the rating-order rule, the zero-copy unnest) wherever plans are decoded,
//! optimized or run.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use cxrlake_lake::CxrlakeConfig;
use cxrlake_lake::store::StoreRegistry;
use datafusion::execution::SessionState;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

use crate::codec::{CxrlakeLogicalCodec, CxrlakePhysicalCodec};
use crate::error::{DistributedError, Result};

/// The session config of a cluster member: Ballista's defaults, with cxrlake's config
/// namespace so that `cxrlake.*` keys a client sends are kept, and cxrlake's codecs.
pub fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_option_extension(CxrlakeConfig::default())
        .with_ballista_logical_extension_codec(Arc::new(CxrlakeLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(CxrlakePhysicalCodec::default()))
}

/// cxrlake's session over `config` (functions and planner rules), with Ballista's logical
/// optimizer rules, reading lake tables through `stores`: the scheduler plans every job in one.
pub fn session_state(
    config: SessionConfig,
    stores: Arc<StoreRegistry>,
) -> datafusion::common::Result<SessionState> {
    let runtime = Arc::new(
        RuntimeEnvBuilder::new()
            .with_object_store_registry(stores)
            .build()?,
    );
    let state = cxrlake_udfs::session_context_on(config, runtime).state();
    let rules = ballista_core::optimizer::with_ballista_optimizer_rules(state.optimizers());
    Ok(
        datafusion::execution::SessionStateBuilder::new_from_existing(state)
            .with_optimizer_rules(rules)
            .build(),
    )
}

/// Runs a scheduler on `bind` (port 0: any free port) until the process ends, reading lake
/// tables on object stores with the `storage` options; `ready` gets the address it listens on
/// once clients and executors can connect.
pub async fn run_scheduler(
    bind: SocketAddr,
    storage: HashMap<String, String>,
    ready: impl FnOnce(SocketAddr),
) -> Result<()> {
    let stores = Arc::new(StoreRegistry::new(storage));
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| DistributedError::Bind { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| DistributedError::Bind { addr: bind, source })?;
    let config = SchedulerConfig {
        bind_host: addr.ip().to_string(),
        external_host: addr.ip().to_string(),
        bind_port: addr.port(),
        override_logical_codec: Some(Arc::new(CxrlakeLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(CxrlakePhysicalCodec::default())),
        override_session_builder: Some(Arc::new(move |config| {
            session_state(config, Arc::clone(&stores))
        })),
        override_config_producer: Some(Arc::new(session_config)),
        ..SchedulerConfig::default()
    };
    config.validate()?;
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let scheduler =
        create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config)).await?;
    tracing::info!("scheduler listening on {addr}");
    ready(addr);
    start_grpc_service_with_listener(listener, scheduler).await?;
    Ok(())
}

/// Options of an executor.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler to register with.
    pub scheduler: SocketAddr,
    /// Where the executor serves its results (Arrow Flight).
    pub bind: SocketAddr,
    /// The port of its gRPC service (tasks pushed by the scheduler).
    pub grpc_port: u16,
    /// Tasks run at once; 0 means one per CPU core.
    pub slots: usize,
    /// Folder of its shuffle files [default: a folder in the system's temporary folder].
    pub work_dir: Option<PathBuf>,
    /// The host name the scheduler and the other executors reach it by [default: the `bind`
    /// address].
    pub advertise: Option<String>,
    /// The object-store options it reads lake tables with (`[storage]`, `AWS_*`, …).
    pub storage: HashMap<String, String>,
}

/// Runs an executor until the process ends (or the scheduler stops it); `ready` gets its id
/// once the scheduler answered and the executor is starting.
pub async fn run_executor(options: ExecutorOptions, ready: impl FnOnce(&str)) -> Result<()> {
    // Ballista retries an unreachable scheduler for ever: check it once first.
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect(options.scheduler),
    )
    .await
    .map_err(|_| DistributedError::unreachable(options.scheduler, "timed out"))?
    .map_err(|e| DistributedError::unreachable(options.scheduler, e))?;
    let work_dir = options.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("cxrlake-executor-{}", options.bind.port()))
    });
    std::fs::create_dir_all(&work_dir).map_err(|source| DistributedError::WorkDir {
        path: work_dir.clone(),
        source,
    })?;
    let stores = Arc::new(StoreRegistry::new(options.storage.clone()));
    let registry =
        BallistaFunctionRegistry::from(&session_state(session_config(), Arc::clone(&stores))?);
    let temp = work_dir.clone();
    let runtime: ballista_core::RuntimeProducer = Arc::new(move |_| {
        let runtime = RuntimeEnvBuilder::new()
            .with_temp_file_path(temp.clone())
            .with_object_store_registry(Arc::clone(&stores) as _)
            .build()?;
        Ok(Arc::new(runtime))
    });
    let config = ExecutorProcessConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: Some(
            options
                .advertise
                .clone()
                .unwrap_or_else(|| options.bind.ip().to_string()),
        ),
        port: options.bind.port(),
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler.ip().to_string(),
        scheduler_port: options.scheduler.port(),
        scheduler_connect_timeout_seconds: 10,
        vcores: options.slots,
        work_dir: Some(work_dir.to_string_lossy().into_owned()),
        print_thread_info: false,
        override_function_registry: Some(Arc::new(registry)),
        override_runtime_producer: Some(runtime),
        override_config_producer: Some(Arc::new(session_config)),
        override_logical_codec: Some(Arc::new(CxrlakeLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(CxrlakePhysicalCodec::default())),
        ..ExecutorProcessConfig::default()
    };
    let id = config.executor_id.clone();
    tracing::info!(
        "executor {id} serving on {} registers with the scheduler at {}",
        options.bind,
        options.scheduler
    );
    ready(&id);
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}
