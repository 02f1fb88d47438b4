//! The shipped definitions load, pass the validator and meet the counts.

use cxrlake_refdefs::stats::{MIN_FINDINGS, MIN_LOCALIZED_REGIONS, MIN_REGIONS};
use cxrlake_refdefs::{Laterality, RecipeKind, RefDefs, Sources, check, check_sources};

use crate::common::shipped_dir;

#[test]
fn shipped_definitions_check_clean() {
    let diagnostics = check(&shipped_dir());
    let rendered: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(diagnostics.is_empty(), "{}", rendered.join("\n"));
}

#[test]
fn embedded_definitions_equal_the_shipped_directory() {
    assert!(check_sources(Sources::embedded()).is_empty());
    let embedded = RefDefs::embedded().expect("embedded");
    let loaded = RefDefs::load(&shipped_dir()).expect("load");
    assert_eq!(embedded.fingerprint(), loaded.fingerprint());
    assert!(RefDefs::diff(&embedded, &loaded).is_empty());
}

#[test]
fn counts_meet_the_targets() {
    let defs = RefDefs::load(&shipped_dir()).expect("load");
    let stats = defs.stats();
    assert!(stats.regions >= MIN_REGIONS, "{stats}");
    assert!(stats.localized_regions >= MIN_LOCALIZED_REGIONS, "{stats}");
    assert!(stats.findings >= MIN_FINDINGS, "{stats}");
    assert!(stats.shortfalls().is_empty(), "{stats}");
    for category in ["ANATOMICAL_FINDING", "DISEASE", "DEVICE", "TECHNICAL"] {
        assert!(
            stats
                .findings_by_category
                .get(category)
                .copied()
                .unwrap_or(0)
                >= 10,
            "{category}: {stats}"
        );
    }
    for sub in [
        "TUBES_LINES",
        "ACQUISITION",
        "ARTIFACT",
        "SURGICAL",
        "CARDIAC_DEVICES",
    ] {
        assert!(
            stats.findings_by_subcategory.get(sub).copied().unwrap_or(0) >= 5,
            "{sub}: {stats}"
        );
    }
    for modifier_type in ["severity", "texture", "spread", "temporal"] {
        assert!(
            stats.modifiers_by_type.contains_key(modifier_type),
            "{stats}"
        );
    }
    assert_eq!(stats.cxas_classes, 159);
    assert_eq!(stats.imagenome_boxes, 29);
    assert!(stats.to_string().contains("localized"));
}

#[test]
fn every_recipe_kind_is_used_and_non_localized_regions_are_flagged() {
    let defs = RefDefs::load(&shipped_dir()).expect("load");
    for kind in RecipeKind::ALL {
        assert!(
            defs.regions()
                .any(|r| *r.localization.get_ref().kind.get_ref() == kind),
            "{kind:?} unused"
        );
    }
    let interstitium = defs.region("lung interstitium").expect("interstitium");
    assert!(!interstitium.is_localized());
    assert_eq!(
        defs.recipe("lung interstitium"),
        Some(cxrlake_refdefs::Recipe::None)
    );
    let lungs = defs.recipe("lungs").expect("lungs");
    assert_eq!(
        lungs,
        cxrlake_refdefs::Recipe::Bilateral {
            left: "left lung".into(),
            right: "right lung".into()
        }
    );
    let lll = defs.region("left lower lobe").expect("lll");
    assert_eq!(*lll.laterality.get_ref(), Laterality::Left);
    assert_eq!(
        lll.right.as_ref().map(|n| n.get_ref().as_str()),
        Some("right lower lobe")
    );
}

#[test]
fn dataset_info_lists_the_vocabularies() {
    let defs = RefDefs::embedded().expect("embedded");
    let info = defs.dataset_info();
    let len = |key: &str| info[key].as_array().map_or(0, Vec::len);
    assert_eq!(len("region_names"), defs.stats().regions);
    assert_eq!(len("finding_entities"), defs.stats().findings);
    assert_eq!(len("certainties"), 5);
    assert_eq!(len("positiveness"), 4);
    assert_eq!(len("answer_types"), 3);
    assert!(
        info["modifiers"]["severity"]
            .as_array()
            .is_some_and(|v| v.iter().any(|m| m == "mild"))
    );
    assert!(
        info["finding_categories"]
            .as_array()
            .is_some_and(|v| v.iter().any(|c| c == "DEVICE"))
    );
    assert_eq!(info["refdefs_fingerprint"], defs.fingerprint());
}
