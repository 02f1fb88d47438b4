//! Loading and validating the templates folder.

use cxrlake_refdefs::RefDefs;
use cxrlake_templates::{Error, Strategy, Templates};

const IDS: [&str; 27] = [
    "A_indication",
    "B01_describe_all",
    "B02_describe_abnormal",
    "B03_is_abnormal",
    "B04_is_normal",
    "B08_describe_subcat",
    "B09_describe_abnormal_subcat",
    "B10_is_abnormal_subcat",
    "B11_is_normal_subcat",
    "B12_describe_device",
    "B13_has_devices",
    "B14_describe_acquisition",
    "B15_describe_imaging_artifacts",
    "B16_has_imaging_artifacts",
    "C01_describe_region",
    "C02_describe_abnormal_region",
    "C03_is_abnormal_region",
    "C04_is_normal_region",
    "C07_describe_region_device",
    "C08_has_region_device",
    "D01_describe_finding",
    "D02_has_finding",
    "D03_where_is_finding",
    "D04_how_severe_is_finding",
    "D05_describe_device",
    "D06_has_device",
    "D07_where_is_device",
];

fn defs() -> RefDefs {
    RefDefs::embedded().expect("refdefs")
}

fn repo_templates() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates")
}

#[test]
fn embedded_templates_are_the_27_of_tables_13_to_15() {
    let templates = Templates::embedded(&defs()).expect("embedded templates load");
    let ids: Vec<&str> = templates.templates.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, IDS);
    let count = |s: Strategy| {
        templates
            .templates
            .iter()
            .filter(|t| t.strategy == s)
            .count()
    };
    // Paper section 3.2: 13 study, 6 region and 7 finding templates, plus the indication.
    assert_eq!(count(Strategy::Indication), 1);
    assert_eq!(count(Strategy::Abnormal), 13);
    assert_eq!(count(Strategy::RegionAbnormal), 6);
    assert_eq!(count(Strategy::Finding), 7);
    assert!(
        templates.version().starts_with("1+"),
        "{}",
        templates.version()
    );
}

#[test]
fn every_repository_file_is_embedded_and_loading_the_folder_gives_the_same_version() {
    let loaded = Templates::load(&repo_templates(), &defs()).expect("folder loads");
    let embedded = Templates::embedded(&defs()).expect("embedded");
    assert_eq!(loaded.version(), embedded.version());
    assert_eq!(loaded.templates, embedded.templates);
}

/// Copies the repository's folder and replaces one file's text.
fn load_with(file: &str, edit: impl Fn(&str) -> String) -> Result<Templates, Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(repo_templates()).expect("read") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            continue; // mimic_cxr_vqa/: another flavour's bank
        }
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).expect("text");
        let text = if name == file { edit(&text) } else { text };
        std::fs::write(dir.path().join(&name), text).expect("write");
    }
    Templates::load(dir.path(), &defs())
}

fn invalid(result: Result<Templates, Error>) -> (String, String) {
    match result {
        Err(Error::Invalid { file, reason }) => (file, reason),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn a_changed_file_changes_the_version() {
    let edited = load_with("B01_describe_all.toml", |t| format!("{t}\n# note\n")).expect("loads");
    let embedded = Templates::embedded(&defs()).expect("embedded");
    assert_ne!(edited.version(), embedded.version());
}

#[test]
fn errors_name_the_file_and_the_problem() {
    let (file, reason) = invalid(load_with("B03_is_abnormal.toml", |t| {
        t.replace("subset = \"finding_neg\"", "subset = \"related_regions\"")
    }));
    assert_eq!(file, "B03_is_abnormal.toml");
    assert!(reason.contains("related_regions"), "{reason}");

    let (file, reason) = invalid(load_with("D02_has_finding.toml", |t| {
        format!(
            "{t}\n[[parts]]\nsubset = \"finding_pos\"\nanswer_type = \"details\"\nprefix = \"In the {{region}}:\"\n"
        )
    }));
    assert_eq!(file, "D02_has_finding.toml");
    assert!(reason.contains("{region}"), "{reason}");

    let (file, reason) = invalid(load_with("C01_describe_region.toml", |t| {
        format!(
            "{t}\n[[parts]]\nsubset = \"finding_pos\"\nanswer_type = \"details\"\nwhen = \"sometimes\"\n"
        )
    }));
    assert_eq!(file, "C01_describe_region.toml");
    assert!(reason.contains("sometimes"), "{reason}");

    let (file, reason) = invalid(load_with("strategies.toml", |t| {
        t.replace("\"pleural effusion\"", "\"pleural effusions galore\"")
    }));
    assert_eq!(file, "strategies.toml");
    assert!(reason.contains("pleural effusions galore"), "{reason}");

    let (file, reason) = invalid(load_with("B08_describe_subcat.toml", |t| {
        t.replace("strategy = \"abnormal\"", "strategy = \"abnormality\"")
    }));
    assert_eq!(file, "B08_describe_subcat.toml");
    assert!(reason.contains("abnormality"), "{reason}");
}
