//! Across the 200-study corpus the reports show the phenomena the extraction stage must handle.

use crate::common::{corpus, truth};

fn reports() -> Vec<(serde_json::Value, String)> {
    let (dir, _) = corpus();
    truth(dir)
        .into_iter()
        .map(|study| {
            let patient = study["patient_id"].as_str().expect("patient").to_owned();
            let id = study["study_id"].as_str().expect("study").to_owned();
            let text = std::fs::read_to_string(
                dir.join(format!("files/{}/{patient}/{id}.txt", &patient[..3])),
            )
            .expect("report");
            (study, text)
        })
        .collect()
}

#[test]
fn reports_contain_the_required_phenomena() {
    let reports = reports();
    let all: String = reports
        .iter()
        .map(|(_, t)| t.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
        .collect();
    for needle in [
        "FINAL REPORT",
        "WET READ",
        "EXAMINATION:",
        "INDICATION:",
        "TECHNIQUE:",
        "COMPARISON:",
        "FINDINGS:",
        "IMPRESSION:",
        "___",
        " 1. ",
        " 2. ",
        " or pneumothorax.",
        "may represent",
        "cannot be excluded",
        "likely",
        "unchanged",
        "increased",
        "cm above the carina",
        "SVC",
        "left lower lobe",
        "right",
        "bilateral",
        "small",
        "moderate",
        "No acute cardiopulmonary",
    ] {
        assert!(all.contains(needle), "no report contains {needle:?}");
    }
    assert!(
        ["HISTORY:", "REASON FOR EXAM:", "CLINICAL HISTORY:"]
            .iter()
            .any(|n| all.contains(n)),
        "no renamed indication section"
    );
    assert!(
        ["CONCLUSION:", "IMPRESSIONS:"]
            .iter()
            .any(|n| all.contains(n)),
        "no renamed impression section"
    );
    assert!(
        reports
            .iter()
            .any(|(_, t)| !t.contains("IMPRESSION") && !t.contains("CONCLUSION")),
        "no report without impression"
    );
    assert!(
        reports.iter().any(|(_, t)| !t.contains("FINDING")),
        "no report without findings"
    );
}

#[test]
fn ground_truth_sentences_come_from_their_reports() {
    let reports = reports();
    let mut multi_finding_sentences = 0;
    let mut hedged = 0;
    let mut negated = 0;
    let mut with_change = 0;
    let mut with_severity = 0;
    let mut normal = 0;
    for (study, text) in &reports {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let findings = study["findings"].as_array().expect("findings");
        for f in findings {
            let sentence = f["sentence"].as_str().expect("sentence");
            assert!(flat.contains(sentence), "{sentence:?} not in report");
            assert!(["pos", "neg"].contains(&f["positiveness"].as_str().expect("positiveness")));
            assert!(
                ["certain", "likely", "uncertain"]
                    .contains(&f["certainty"].as_str().expect("certainty"))
            );
            assert!(f["regions"].is_array());
            for region in f["regions"].as_array().expect("regions") {
                assert!(cxrlake_synth::vocab::region(region.as_str().expect("region")).is_some());
            }
            hedged += usize::from(f["certainty"] != "certain");
            negated += usize::from(f["positiveness"] == "neg");
            with_change += usize::from(f.get("change").is_some());
            with_severity += usize::from(f.get("severity").is_some());
            let same_sentence = findings
                .iter()
                .filter(|g| g["sentence"] == f["sentence"] && g["section"] == f["section"])
                .count();
            multi_finding_sentences += usize::from(same_sentence > 1 && f["positiveness"] == "pos");
        }
        normal += usize::from(study["normal"] == true);
        assert!(study["indication"].is_null() || study["indication"].is_string());
    }
    let n = reports.len();
    assert!(
        normal > n / 8 && normal < n * 3 / 4,
        "{normal} normal studies of {n}"
    );
    for (what, count) in [
        ("hedged", hedged),
        ("negated", negated),
        ("change", with_change),
        ("severity", with_severity),
        ("multi-finding", multi_finding_sentences),
    ] {
        assert!(count >= 10, "only {count} {what} statements");
    }
}

#[test]
fn common_findings_are_common() {
    let reports = reports();
    let share = |name: &str| {
        reports
            .iter()
            .filter(|(s, _)| {
                s["findings"]
                    .as_array()
                    .expect("f")
                    .iter()
                    .any(|f| f["finding"] == name && f["positiveness"] == "pos")
            })
            .count() as f64
            / reports.len() as f64
    };
    for name in [
        "pleural effusion",
        "atelectasis",
        "cardiomegaly",
        "pulmonary edema",
    ] {
        assert!(
            share(name) > 0.05,
            "{name} in only {:.3} of studies",
            share(name)
        );
    }
    let devices = [
        "endotracheal tube",
        "enteric tube",
        "central venous catheter",
        "picc line",
        "pacemaker",
        "chest tube",
    ];
    let with_device = reports
        .iter()
        .filter(|(s, _)| {
            s["findings"]
                .as_array()
                .expect("f")
                .iter()
                .any(|f| devices.contains(&f["finding"].as_str().unwrap_or("")))
        })
        .count();
    assert!(with_device > reports.len() / 10);
    assert!(share("pneumothorax") < share("pleural effusion"));
}
