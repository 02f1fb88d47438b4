//! `SliceUnnestRule`: the physical optimizer rule that puts [`SliceUnnestExec`] in place of
//! every `UnnestExec` it can replace.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::unnest::UnnestExec;

use super::SliceUnnestExec;

/// Replaces `UnnestExec` by [`SliceUnnestExec`] where it unnests one list column one level deep
/// and drops NULL and empty lists (plain SQL `unnest`); other unnests are left to DataFusion.
#[derive(Debug, Default)]
pub struct SliceUnnestRule;

impl SliceUnnestRule {
    /// The rule.
    pub fn new() -> Self {
        Self
    }
}

impl PhysicalOptimizerRule for SliceUnnestRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let sliced = node
                .downcast_ref::<UnnestExec>()
                .and_then(SliceUnnestExec::try_new);
            Ok(match sliced {
                Some(exec) => Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "cxrlake_slice_unnest"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
