//! The pipeline graph, declared once: every stage in the order a run executes them. `plan`,
//! `status`, `run` and the incremental logic read it; a table's producer for a stage is the
//! nearest stage before it that writes the table.

use std::sync::Arc;

use crate::stage::Stage;

/// The built-in stages, in run order.
pub fn graph() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(crate::localize::Localize),
        Arc::new(crate::extract::Extract),
        Arc::new(crate::map::Map),
        Arc::new(crate::graph::Graph),
        Arc::new(crate::balance::Balance),
        Arc::new(crate::qa::Qa),
        Arc::new(crate::judge::Judge),
        Arc::new(crate::grade::Grade),
    ]
}
