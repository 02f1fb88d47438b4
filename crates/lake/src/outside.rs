//! Tables outside the lake, named by a quoted path or URL in a query's FROM (`cxrlake sql`): a
//! folder holding a Delta table (`_delta_log/`, e.g. a table of another lake) is read as that
//! Delta table at its latest version; anything else as files by extension (Parquet, CSV, JSON,
//! compressed or not), DataFusion's listing tables. Object-store URLs use the lake's `[storage]`
//! options.
//!
//! ```sql
//! SELECT count(*) FROM '/data/other-lake/qa' WHERE rating >= 'A';
//! SELECT * FROM 'rel/metadata/question_metadata.parquet' LIMIT 5;
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{DynamicFileCatalog, TableProvider, UrlTableFactory};
use datafusion::common::Result as DfResult;
use datafusion::datasource::dynamic_file::DynamicListTableFactory;
use datafusion::prelude::SessionContext;
use datafusion_session::SessionStore;
use deltalake::DeltaTableBuilder;
use futures::StreamExt;

use crate::error::Result;
use crate::lake::Lake;
use crate::store::{parse_root, root_store};

/// Resolves outside tables: Delta folders first, then files.
#[derive(Debug)]
struct OutsideTables {
    files: Arc<DynamicListTableFactory>,
    storage: HashMap<String, String>,
    session: SessionStore,
}

impl OutsideTables {
    /// The Delta table at `location`, if it is a folder with a `_delta_log/`.
    async fn delta(&self, location: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let Ok(root) = parse_root(location) else {
            return Ok(None);
        };
        let Ok((store, path)) = root_store(&root, &self.storage) else {
            return Ok(None);
        };
        let log = path.clone().join("_delta_log");
        if !matches!(store.list(Some(&log)).next().await, Some(Ok(_))) {
            return Ok(None);
        }
        let mut table = DeltaTableBuilder::from_url(root.clone())?
            .with_storage_backend(store, root)
            .build()?;
        table.load().await?;
        let mut provider = table.table_provider();
        if let Some(state) = self.session.get_session().upgrade() {
            let state = state.read();
            if let Some(state) = state
                .as_any()
                .downcast_ref::<datafusion::execution::SessionState>()
            {
                provider = provider.with_session(Arc::new(state.clone()));
            }
        }
        Ok(Some(provider.await?))
    }
}

#[async_trait]
impl UrlTableFactory for OutsideTables {
    async fn try_new(&self, url: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match self.delta(url).await? {
            Some(table) => Ok(Some(table)),
            None => self.files.try_new(url).await,
        }
    }
}

impl Lake {
    /// A session over the lake ([`Lake::session`]) in which a quoted path or URL in FROM reads an
    /// outside table: a Delta table's folder, or files by extension.
    pub async fn session_with_outside_tables(&self) -> Result<SessionContext> {
        let ctx = self.session().await?;
        let files = Arc::new(DynamicListTableFactory::new(SessionStore::new()));
        let factory = Arc::new(OutsideTables {
            files: Arc::clone(&files),
            storage: self.settings().storage.clone(),
            session: SessionStore::new(),
        });
        let catalogs = Arc::new(DynamicFileCatalog::new(
            Arc::clone(ctx.state().catalog_list()),
            Arc::clone(&factory) as Arc<dyn UrlTableFactory>,
        ));
        let session_id = ctx.session_id();
        let ctx: SessionContext = ctx
            .into_state_builder()
            .with_session_id(session_id)
            .with_catalog_list(catalogs)
            .build()
            .into();
        files.session_store().with_state(ctx.state_weak_ref());
        factory.session.with_state(ctx.state_weak_ref());
        Ok(ctx)
    }
}
