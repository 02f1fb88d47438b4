//! Dataset flavours: the other seed datasets cxrlake builds over the same lake. A flavour is one
//! crate (`crates/<flavour>/`: its domain logic, stages, SQL, functions and tests) that declares a
//! [`Flavour`] (its stages, added to the pipeline graph when `cxrlake.flavours` names it, and the
//! check of its settings); `cxrlake-flavours` lists them, and whoever opens a
//! [`Pipeline`](crate::Pipeline) passes that list ([`Pipeline::builder`](crate::Pipeline::builder)).
//! A flavour's stages are stages like the others: one runner, incremental, with their fingerprints.

use std::sync::Arc;

use cxrlake_lake::{Lake, Settings};
use datafusion::logical_expr::ScalarUDF;

use crate::error::{PipelineError, Result};
use crate::pipeline::Pipeline;
use crate::stage::Stage;

/// One flavour.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    /// Its name (`cxrlake.flavours`, table and stage prefix).
    pub name: &'static str,
    /// What it builds.
    pub doc: &'static str,
    /// Its stages, in run order (after the built-in ones).
    pub stages: fn() -> Vec<Arc<dyn Stage>>,
    /// Checks that its settings name something usable (run before a run is recorded, whether
    /// the flavour is kept or not, so that the lake stores only settings it can run with).
    pub check: fn(&Pipeline) -> Result<()>,
    /// SQL functions it offers every session of the `cxrlake` binary (`cxrlake sql "SELECT
    /// rexvqa_phi(…)"`), besides those its stages bind for their own SQL.
    pub functions: fn() -> Vec<ScalarUDF>,
}

/// The flavours a pipeline knows (`cxrlake_flavours::ALL` for the `cxrlake` binary).
pub type Flavours = &'static [Flavour];

/// The flavours `names` (comma separated) selects; an unknown name lists the flavours.
pub fn selected(flavours: Flavours, names: &str) -> Result<Vec<&'static Flavour>> {
    let mut out: Vec<&'static Flavour> = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let flavour = flavours.iter().find(|f| f.name == name).ok_or_else(|| {
            PipelineError::setting(
                "flavours",
                format!(
                    "unknown flavour '{name}'; the flavours are: {}",
                    flavours
                        .iter()
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if !out.iter().any(|f| f.name == name) {
            out.push(flavour);
        }
    }
    Ok(out)
}

/// Applies `--flavour` (`add`) and `--no-flavour` (`remove`) to the kept list
/// (`cxrlake.flavours`, the lake's stored one unless given): a flavour is added or removed, the
/// others stay. Unknown names list the flavours.
pub fn keep(
    flavours: Flavours,
    settings: &mut Settings,
    add: &[String],
    remove: &[String],
) -> Result<()> {
    if add.is_empty() && remove.is_empty() {
        return Ok(());
    }
    let mut kept: Vec<&str> = selected(flavours, &settings.cxrlake.flavours)?
        .iter()
        .map(|f| f.name)
        .collect();
    for flavour in selected(flavours, &add.join(","))? {
        if !kept.contains(&flavour.name) {
            kept.push(flavour.name);
        }
    }
    if remove.iter().any(|name| name.trim() == "all") {
        kept.clear();
    } else {
        let removed = selected(flavours, &remove.join(","))?;
        kept.retain(|name| !removed.iter().any(|f| f.name == *name));
    }
    // In the registry's order, so that the same set is stored as the same text.
    let text = flavours
        .iter()
        .filter(|f| kept.contains(&f.name))
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(",");
    settings.set("flavours", &text)?;
    Ok(())
}

/// Whether the lake holds a table that one of `flavour`'s stages wrote (its own first output).
pub async fn built(lake: &Lake, flavour: &Flavour) -> Result<bool> {
    for stage in (flavour.stages)() {
        if let Some(table) = stage.def().outputs.first() {
            let history = match lake.history(table, Some(2_000)).await {
                Ok(history) => history,
                Err(cxrlake_lake::LakeError::NoSuchTable { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let name = stage.def().name;
            if history
                .iter()
                .any(|c| c.stage.as_ref().is_some_and(|s| s.stage == name))
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The flavour whose stages include `stage`, if any.
pub fn owning(flavours: Flavours, stage: &str) -> Option<&'static Flavour> {
    flavours
        .iter()
        .find(|f| (f.stages)().iter().any(|s| s.def().name == stage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Vec<Arc<dyn Stage>> {
        vec![Arc::new(crate::qa::Qa)]
    }

    const TOY: &[Flavour] = &[
        Flavour {
            name: "toy",
            doc: "",
            stages: none,
            check: |_| Ok(()),
            functions: Vec::new,
        },
        Flavour {
            name: "other",
            doc: "",
            stages: Vec::new,
            check: |_| Ok(()),
            functions: Vec::new,
        },
    ];

    #[test]
    fn flavours_are_selected_by_name_and_kept_additively() {
        let names: Vec<&str> = selected(TOY, " toy, toy ,")
            .expect("toy")
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["toy"]);
        assert!(selected(TOY, "").expect("none").is_empty());
        let err = selected(TOY, "toy,vqa_rad")
            .expect_err("unknown")
            .to_string();
        assert!(
            err.contains("unknown flavour 'vqa_rad'") && err.contains("other"),
            "{err}"
        );
        assert_eq!(owning(TOY, "qa").map(|f| f.name), Some("toy"));
        assert!(owning(TOY, "grade").is_none());
        let mut settings = Settings::default();
        keep(TOY, &mut settings, &["other".into()], &[]).expect("add");
        keep(TOY, &mut settings, &["toy".into()], &[]).expect("add");
        assert_eq!(settings.cxrlake.flavours, "toy,other");
        keep(TOY, &mut settings, &[], &["toy".into()]).expect("remove");
        assert_eq!(settings.cxrlake.flavours, "other");
    }
}
