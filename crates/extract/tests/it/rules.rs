//! The rule-based backend on reports in several writing styles: our synthetic corpus, old
//! all-caps MIMIC with a wet read, numbered impressions, no headers, mixed-case headers.

use std::sync::OnceLock;

use cxrlake_extract::rules::{RulesExtractor, split_sentences};
use cxrlake_extract::{RawObservation, SectionType, Sentence, clusters};
use cxrlake_refdefs::RefDefs;

fn extractor() -> &'static RulesExtractor {
    static EXTRACTOR: OnceLock<RulesExtractor> = OnceLock::new();
    EXTRACTOR.get_or_init(|| RulesExtractor::new(&RefDefs::embedded().expect("embedded refdefs")))
}

const SYNTHETIC: &str = " WET READ: ___ ___ ___ 4:12 PM
  Small left pleural effusion.
 ______________________________________________________________________________
                                 FINAL REPORT
 EXAMINATION:  CHEST (PA AND LAT)
 
 INDICATION:  ___F with new onset ascites // eval for infection
 
 TECHNIQUE:  Chest PA and lateral.
 
 COMPARISON:  Chest radiograph from ___.
 
 FINDINGS:
 
 PA and lateral views of the chest provided. New small left pleural effusion.
 Bibasilar atelectasis has worsened. No focal consolidation, pleural effusion, or
 pneumothorax. The lungs are clear. Heart size is normal.
 
 IMPRESSION:
 
 1. New small left pleural effusion.
 
 2. Worsening bibasilar atelectasis, possibly
 aspiration.
";

const OLD_CAPS: &str = "                                 FINAL REPORT
 PORTABLE CHEST OF ___
 
 CLINICAL HISTORY:  72-year-old man with cough and fever, ?pneumonia.
 
 COMPARISON:  ___.
 
 FINDINGS:  AN ENDOTRACHEAL TUBE TERMINATES 4.5 CM ABOVE THE CARINA.  A RIGHT IJ
 CENTRAL VENOUS CATHETER IS UNCHANGED IN POSITION.  THERE IS A LEFT LOWER LOBE
 OPACITY CONCERNING FOR PNEUMONIA.  NO PNEUMOTHORAX, BUT THERE IS A SMALL LEFT
 EFFUSION.  BILATERAL PLEURAL EFFUSIONS, LEFT GREATER THAN RIGHT.
 
 IMPRESSION:  LEFT LOWER LOBE PNEUMONIA.
 
 NOTIFICATION:  The findings were discussed with Dr. ___ at 2:30 pm on ___.
";

const NO_HEADERS: &str = "PA and lateral views of the chest.
The lungs are clear without consolidation or effusion. The heart is mildly
enlarged. Pneumothorax has resolved. Right basilar opacity may represent
atelectasis, although pneumonia cannot be excluded.
";

const MIXED_CASE: &str = "History: Shortness of breath. Evaluate for edema.

Findings:
Moderate pulmonary edema is worse compared to prior. Stable cardiomegaly.
It is unchanged since ___. Left PICC tip in the mid SVC.

Impression:
Worsening pulmonary edema.
RECOMMENDATION(S): Follow-up radiograph is recommended.
";

const NUMBERED: &str = "EXAMINATION: CHEST PORTABLE AP
REASON FOR EXAM: ___M s/p fall, evaluate for rib fracture.
IMPRESSION: 1. No acute cardiopulmonary process. 2. No displaced rib fracture
identified. 3. Tip of the enteric tube is in the stomach.
";

fn sentence_rows(sentences: &[Sentence]) -> Vec<(String, &'static str, String)> {
    sentences
        .iter()
        .map(|s| {
            (
                s.section.clone(),
                s.section_type.as_str(),
                s.sentence.clone(),
            )
        })
        .collect()
}

fn observe(text: &str) -> Vec<RawObservation> {
    extractor().observations(&[text])
}

fn summary(observations: &[RawObservation]) -> Vec<(String, String)> {
    observations
        .iter()
        .map(|o| (o.entity.clone(), o.probability.clone().unwrap_or_default()))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn synthetic_report_sections_and_types() {
    let sentences = extractor().sentences(SYNTHETIC);
    let rows = sentence_rows(&sentences);
    let expected = [
        ("WET_READ", "PRE_FINAL_REPORT", "___ ___ ___ 4:12 PM"),
        (
            "WET_READ",
            "PRE_FINAL_REPORT",
            "Small left pleural effusion.",
        ),
        ("EXAMINATION", "EXAM_TECHNIQUE", "CHEST (PA AND LAT)"),
        (
            "INDICATION",
            "INDICATION",
            "___F with new onset ascites // eval for infection",
        ),
        ("TECHNIQUE", "EXAM_TECHNIQUE", "Chest PA and lateral."),
        ("COMPARISON", "IGNORE", "Chest radiograph from ___."),
        (
            "FINDINGS",
            "FINDINGS",
            "PA and lateral views of the chest provided.",
        ),
        ("FINDINGS", "FINDINGS", "New small left pleural effusion."),
        (
            "FINDINGS",
            "FINDINGS",
            "Bibasilar atelectasis has worsened.",
        ),
        (
            "FINDINGS",
            "FINDINGS",
            "No focal consolidation, pleural effusion, or pneumothorax.",
        ),
        ("FINDINGS", "FINDINGS", "The lungs are clear."),
        ("FINDINGS", "FINDINGS", "Heart size is normal."),
        (
            "IMPRESSION",
            "IMPRESSION",
            "New small left pleural effusion.",
        ),
        (
            "IMPRESSION",
            "IMPRESSION",
            "Worsening bibasilar atelectasis, possibly aspiration.",
        ),
    ];
    let expected: Vec<(String, &str, String)> = expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), *b, (*c).to_owned()))
        .collect();
    assert_eq!(rows, expected);
    let ids: Vec<&str> = sentences.iter().map(|s| s.sent_id.as_str()).collect();
    assert_eq!(ids[0], "S01");
    assert_eq!(ids[13], "S14");
}

#[test]
fn impression_links_to_findings_with_the_same_finding() {
    let sentences = extractor().sentences(SYNTHETIC);
    assert_eq!(sentences[12].merge_with, ["S08"]);
    assert_eq!(sentences[13].merge_with, ["S09"]);
    let clusters = clusters(&sentences);
    assert_eq!(clusters[8], clusters[13]);
    assert_ne!(clusters[7], clusters[8]);
}

#[test]
fn old_caps_report_with_banner_and_notification() {
    let sentences = extractor().sentences(OLD_CAPS);
    assert_eq!(sentences.len(), 10);
    assert_eq!(sentences[0].section, "FINAL_REPORT_NO_SECTION");
    assert_eq!(sentences[0].section_type, SectionType::ExamTechnique);
    assert_eq!(sentences[1].section, "CLINICAL_HISTORY");
    assert_eq!(sentences[1].section_type, SectionType::Indication);
    assert_eq!(
        sentences[3].sentence,
        "AN ENDOTRACHEAL TUBE TERMINATES 4.5 CM ABOVE THE CARINA."
    );
    assert_eq!(
        sentences[6].sentence,
        "NO PNEUMOTHORAX, BUT THERE IS A SMALL LEFT EFFUSION."
    );
    assert_eq!(sentences[8].merge_with, ["S06"]);
    assert_eq!(sentences[9].section, "NOTIFICATION");
    assert_eq!(sentences[9].section_type, SectionType::Ignore);
}

#[test]
fn report_without_headers_infers_types() {
    let sentences = extractor().sentences(NO_HEADERS);
    let types: Vec<SectionType> = sentences.iter().map(|s| s.section_type).collect();
    assert_eq!(
        types,
        [
            SectionType::ExamTechnique,
            SectionType::Findings,
            SectionType::Findings,
            SectionType::Findings,
            SectionType::Findings,
        ]
    );
    assert!(
        sentences
            .iter()
            .all(|s| s.section == "FINAL_REPORT_NO_SECTION")
    );
    assert_eq!(sentences[2].sentence, "The heart is mildly enlarged.");
}

#[test]
fn numbered_inline_impression_items_are_sentences() {
    let sentences = extractor().sentences(NUMBERED);
    let rows = sentence_rows(&sentences);
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[1].0, "REASON_FOR_EXAM");
    assert_eq!(rows[1].1, "INDICATION");
    assert_eq!(rows[2].2, "No acute cardiopulmonary process.");
    assert_eq!(rows[3].2, "No displaced rib fracture identified.");
    assert_eq!(rows[4].2, "Tip of the enteric tube is in the stomach.");
    assert!(rows[2..].iter().all(|r| r.1 == "IMPRESSION"));
}

#[test]
fn mixed_case_headers_and_continuations() {
    let sentences = extractor().sentences(MIXED_CASE);
    assert_eq!(sentences.len(), 8);
    assert_eq!(sentences[0].section, "HISTORY");
    assert_eq!(sentences[4].sentence, "It is unchanged since ___.");
    assert_eq!(sentences[4].merge_with, ["S04"]);
    assert_eq!(sentences[6].merge_with, ["S03"]);
    assert_eq!(sentences[7].section, "RECOMMENDATIONS");
    assert_eq!(sentences[7].section_type, SectionType::Impression);
}

#[test]
fn coordinated_negation_gives_one_negative_observation_each() {
    let observations = observe("No focal consolidation, pleural effusion, or pneumothorax.");
    assert_eq!(
        summary(&observations),
        pairs(&[
            ("consolidation", "negative"),
            ("pleural effusion", "negative"),
            ("pneumothorax", "negative"),
        ])
    );
    assert_eq!(observations[2].summary_sentence, "No pneumothorax.");
}

#[test]
fn but_terminates_the_negation_scope() {
    let observations = observe("No pneumothorax, but there is a small left effusion.");
    assert_eq!(
        summary(&observations),
        pairs(&[("pneumothorax", "negative"), ("effusion", "positive")])
    );
    let effusion = &observations[1];
    assert_eq!(effusion.name, "left effusion");
    assert_eq!(effusion.regions, ["left"]);
    assert_eq!(effusion.modifiers, ["small"]);
    assert_eq!(effusion.summary_sentence, "There is a small left effusion.");
}

#[test]
fn uncertainty_cues_forward_and_backward() {
    let observations = observe(
        "Right basilar opacity may represent atelectasis, although pneumonia cannot be excluded.",
    );
    assert_eq!(
        summary(&observations),
        pairs(&[
            ("opacity", "positive"),
            ("atelectasis", "possible"),
            ("pneumonia", "possible"),
        ])
    );
    assert_eq!(observations[0].name, "right basilar opacity");
    let likely = observe("Left lower lobe opacity, likely atelectasis.");
    assert_eq!(
        summary(&likely),
        pairs(&[("opacity", "positive"), ("atelectasis", "probable")])
    );
}

#[test]
fn post_negation_and_resolution() {
    assert_eq!(
        summary(&observe("Pneumothorax is not seen.")),
        pairs(&[("pneumothorax", "negative")])
    );
    let resolved = observe("Pneumothorax has resolved.");
    assert_eq!(resolved[0].probability.as_deref(), Some("negative"));
    assert_eq!(resolved[0].change.as_deref(), Some("resolved"));
}

#[test]
fn change_language_moves_to_the_change_sentence() {
    let new = observe("New small left pleural effusion.");
    assert_eq!(new[0].change.as_deref(), Some("new"));
    assert_eq!(new[0].summary_sentence, "Small left pleural effusion.");
    assert_eq!(
        new[0].change_sentence.as_deref(),
        Some("Left pleural effusion is new.")
    );
    let worse = observe("Left pleural effusion has worsened compared to prior.");
    assert_eq!(worse[0].change.as_deref(), Some("worsened"));
    assert_eq!(worse[0].summary_sentence, "Left pleural effusion.");
    assert_eq!(
        worse[0].change_sentence.as_deref(),
        Some("Left pleural effusion has worsened compared to prior.")
    );
    let plain = observe("Small left pleural effusion.");
    assert_eq!(plain[0].change, None);
    assert_eq!(plain[0].change_sentence, None);
}

#[test]
fn bilateral_findings_get_regional_children() {
    let effusions = observe("Bilateral pleural effusions, left greater than right.");
    assert_eq!(effusions.len(), 1);
    assert_eq!(effusions[0].regions, ["bilateral"]);
    let children: Vec<(&str, &str)> = effusions[0]
        .children
        .iter()
        .map(|c| (c.child_type.as_deref().unwrap_or_default(), c.name.as_str()))
        .collect();
    assert_eq!(
        children,
        [
            ("regional_distinction", "left pleural effusions"),
            ("regional_distinction", "right pleural effusions"),
        ]
    );
    let atelectasis = observe("Bibasilar atelectasis.");
    let names: Vec<&str> = atelectasis[0]
        .children
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["left basilar atelectasis", "right basilar atelectasis"]
    );
    assert_eq!(atelectasis[0].children[0].regions, ["left basilar"]);
}

#[test]
fn devices_are_observations_with_positions() {
    let observations = observe("AN ENDOTRACHEAL TUBE TERMINATES 4.5 CM ABOVE THE CARINA.");
    assert_eq!(
        summary(&observations),
        pairs(&[("endotracheal tube", "positive")])
    );
    assert_eq!(observations[0].regions, ["carina"]);
    assert_eq!(observations[0].name, "endotracheal tube");
    let picc = observe("Left PICC tip in the mid SVC.");
    assert_eq!(picc[0].name, "left picc");
    assert_eq!(
        picc[0].children[0].child_type.as_deref(),
        Some("device_part")
    );
}

#[test]
fn normal_statements_are_observations() {
    assert_eq!(
        summary(&observe("The lungs are clear.")),
        pairs(&[("clear lungs", "positive")])
    );
    assert_eq!(
        summary(&observe("Heart size is normal.")),
        pairs(&[("normal heart size", "positive")])
    );
    assert_eq!(
        summary(&observe("No acute cardiopulmonary process.")),
        pairs(&[("no acute cardiopulmonary process", "positive")])
    );
    assert_eq!(
        summary(&observe(
            "The cardiomediastinal silhouette is within normal limits."
        )),
        pairs(&[("normal cardiomediastinal silhouette", "positive")])
    );
    let enlarged = observe("The heart is mildly enlarged.");
    assert_eq!(summary(&enlarged), pairs(&[("cardiomegaly", "positive")]));
    assert_eq!(enlarged[0].modifiers, ["mildly"]);
}

#[test]
fn cluster_duplicates_are_merged() {
    let observations = extractor().observations(&[
        "Bibasilar atelectasis has worsened.",
        "Worsening bibasilar atelectasis, possibly aspiration.",
    ]);
    assert_eq!(
        summary(&observations),
        pairs(&[
            ("bibasilar atelectasis", "positive"),
            ("aspiration", "possible")
        ])
    );
    assert_eq!(observations[0].change.as_deref(), Some("worsened"));
}

#[test]
fn indication_like_listing_six() {
    let findings = [
        (
            "S01",
            "There is no focal consolidation, pleural effusion or pneumothorax.",
        ),
        ("S02", "No acute cardiopulmonary process."),
    ];
    let indication = extractor()
        .indication(
            "___F with new onset ascites // eval for infection",
            &findings,
        )
        .expect("indication");
    assert_eq!(indication.patient_info.as_deref(), Some("female"));
    assert_eq!(indication.indication.as_deref(), Some("New onset ascites."));
    assert_eq!(
        indication.evaluation.as_deref(),
        Some("Evaluate for infection.")
    );
    assert_eq!(
        indication.indication_summary.as_deref(),
        Some("Female with new onset ascites; should be evaluated for infection.")
    );
    assert_eq!(indication.associated_findings, ["S01"]);
    assert_eq!(
        indication.answer_for_indication.as_deref(),
        Some(
            "Evaluation for infection is negative: There is no focal consolidation, pleural \
             effusion or pneumothorax."
        )
    );
}

#[test]
fn indication_positive_answer_and_question_mark_form() {
    let findings = [
        (
            "S04",
            "THERE IS A LEFT LOWER LOBE OPACITY CONCERNING FOR PNEUMONIA.",
        ),
        ("S05", "NO PNEUMOTHORAX."),
        ("S06", "LEFT LOWER LOBE PNEUMONIA."),
    ];
    let indication = extractor()
        .indication(
            "72-year-old man with cough and fever, ?pneumonia.",
            &findings,
        )
        .expect("indication");
    assert_eq!(indication.patient_info.as_deref(), Some("72-year-old male"));
    assert_eq!(indication.indication.as_deref(), Some("Cough and fever."));
    assert_eq!(
        indication.evaluation.as_deref(),
        Some("Evaluate for pneumonia.")
    );
    assert_eq!(indication.associated_findings, ["S04", "S06"]);
    assert!(
        indication
            .answer_for_indication
            .as_deref()
            .is_some_and(|a| a.starts_with("Evaluation for pneumonia is positive: "))
    );
}

#[test]
fn indication_falls_back_to_normal_statements_and_handles_empty_text() {
    let findings = [
        ("S02", "No acute cardiopulmonary process."),
        ("S03", "Tip of the enteric tube is in the stomach."),
    ];
    let indication = extractor()
        .indication("Pre-operative evaluation.", &findings)
        .expect("indication");
    assert_eq!(indication.patient_info, None);
    assert_eq!(indication.evaluation, None);
    assert_eq!(indication.associated_findings, ["S02"]);
    assert_eq!(extractor().indication("  ___ ", &findings), None);
    assert_eq!(extractor().indication(" \n ", &findings), None);
}

#[test]
fn split_sentences_handles_real_world_punctuation() {
    assert_eq!(
        split_sentences(
            "ET tube tip approx. 4.5 cm above the carina.  NG tube in stomach.\n1. No PTX."
        ),
        [
            "ET tube tip approx. 4.5 cm above the carina.",
            "NG tube in stomach.",
            "No PTX."
        ]
    );
}

#[test]
fn odd_text_never_panics() {
    let odd = [
        "",
        "   \n\n ",
        "____\n FINAL REPORT\n",
        "FINDINGS: é é. Ünd pneumothoraxé. Ödem?",
        "IMPRESSION: 1.\n2)\n(3) ...",
        "No. 1 effusion; with; but; which",
        "w/ ñ pneumonia // eval für ödem ?",
        "INDICATION: ___M w/ é?",
    ];
    for text in odd {
        let sentences = extractor().sentences(text);
        let texts: Vec<&str> = sentences.iter().map(|s| s.sentence.as_str()).collect();
        extractor().observations(&texts);
        extractor().indication(text, &[("S01", text)]);
    }
}

#[test]
fn a_real_change_outranks_a_stability_word() {
    let findings = extractor().observations(&[
        "Bibasilar atelectasis is again seen, left greater than right, slightly worse compared to prior.",
    ]);
    assert_eq!(findings[0].entity, "bibasilar atelectasis");
    assert_eq!(findings[0].change.as_deref(), Some("worsened"));
    // Across the sentences of a cluster too: FINDINGS says stable, IMPRESSION says worse.
    let cluster = extractor().observations(&[
        "Bibasilar atelectasis is again seen.",
        "Worsening bibasilar atelectasis.",
    ]);
    assert_eq!(cluster.len(), 1, "{cluster:?}");
    assert_eq!(cluster[0].change.as_deref(), Some("worsened"));
    let volumes = extractor().observations(&["Lung volumes are low."]);
    assert_eq!(
        volumes[0].probability.as_deref(),
        Some("positive"),
        "{volumes:?}"
    );
}

#[test]
fn a_history_that_names_the_patient_is_not_wrapped_again() {
    let indication = extractor()
        .indication(
            "Intubated patient, assess ET tube position.",
            &[(
                "S05",
                "Endotracheal tube terminates 4.5 cm above the carina.",
            )],
        )
        .expect("indication");
    assert_eq!(
        indication.indication_summary.as_deref(),
        Some("Intubated patient; should be evaluated for ET tube position.")
    );
    assert_eq!(
        indication.evaluation.as_deref(),
        Some("Evaluate ET tube position.")
    );
    assert_eq!(indication.associated_findings, ["S05"]);
}

#[test]
fn deidentified_devices_become_device_observations() {
    let chest = observe("There is a left chest ___ with tip projecting over the lower SVC.");
    assert_eq!(summary(&chest), pairs(&[("support devices", "positive")]));
    assert_eq!(chest[0].regions, ["left chest", "lower svc"]);
    assert_eq!(
        chest[0].children[0].child_type.as_deref(),
        Some("device_part")
    );
    let port = observe("Left ___-a-___ is in ___ with the tip in the low SVC.");
    assert_eq!(summary(&port), pairs(&[("port-a-cath", "positive")]));
    // A device named in the sentence is not counted twice; a ___ without a tip or a course is
    // no device.
    assert_eq!(
        summary(&observe("Right IJ ___ line ends in the mid SVC.")),
        pairs(&[("support devices", "positive")])
    );
    assert_eq!(
        summary(&observe("The ___ enteric tube tip is in the stomach.")),
        pairs(&[("enteric tube", "positive")])
    );
    assert!(observe("Findings were discussed with Dr. ___ at ___.").is_empty());
    assert_eq!(
        summary(&observe("The ___ tube has been removed.")),
        pairs(&[("support devices", "negative")])
    );
}

#[test]
fn sizes_make_an_opacity_a_nodule_or_a_mass() {
    let nodule = observe("There is a 1.9 x 1.8 cm round area of density in the right upper lobe.");
    assert_eq!(summary(&nodule), pairs(&[("lung nodule", "positive")]));
    assert_eq!(nodule[0].regions, ["right upper lobe"]);
    assert_eq!(
        summary(&observe("Left perihilar opacity measuring 5 cm.")),
        pairs(&[("lung mass", "positive")])
    );
    assert_eq!(
        summary(&observe("There is an 8 mm density in the right mid lung.")),
        pairs(&[("lung nodule", "positive")])
    );
    // A size elsewhere in the sentence or of another finding changes nothing.
    assert_eq!(
        summary(&observe(
            "Right basilar opacity; the tube tip is 4 cm above the carina."
        )),
        pairs(&[("opacity", "positive")])
    );
    assert_eq!(
        summary(&observe(
            "Patchy opacity 2 cm above the right hemidiaphragm."
        )),
        pairs(&[("patchy opacity", "positive")])
    );
    assert_eq!(
        summary(&observe(
            "Endotracheal tube tip 4 cm above the carina and right basilar opacity."
        )),
        pairs(&[("endotracheal tube", "positive"), ("opacity", "positive")])
    );
}

#[test]
fn negation_reaches_across_line_breaks() {
    let report = "FINDINGS: No focal consolidation, pleural effusion or\n\npneumothorax is \
                  identified.\n\nHeart size is normal.\n";
    let sentences = extractor().sentences(report);
    let texts: Vec<&str> = sentences.iter().map(|s| s.sentence.as_str()).collect();
    assert_eq!(
        texts,
        [
            "No focal consolidation, pleural effusion or pneumothorax is identified.",
            "Heart size is normal."
        ]
    );
    assert_eq!(
        summary(&observe(texts[0])),
        pairs(&[
            ("consolidation", "negative"),
            ("pleural effusion", "negative"),
            ("pneumothorax", "negative"),
        ])
    );
    // A sentence handed over with its line breaks reads the same.
    assert_eq!(
        summary(&observe("No pneumothorax or\npleural\n effusion.")),
        pairs(&[
            ("pneumothorax", "negative"),
            ("pleural effusion", "negative")
        ])
    );
}

#[test]
fn negated_lists_pseudo_negations_and_uncertainty_of_real_reports() {
    assert_eq!(
        summary(&observe(
            "The lungs are clear of focal airspace disease, pneumothorax, or pleural effusion."
        )),
        pairs(&[
            ("airspace disease", "negative"),
            ("pneumothorax", "negative"),
            ("pleural effusion", "negative"),
        ])
    );
    assert_eq!(
        summary(&observe("No visualized pneumothorax.")),
        pairs(&[("pneumothorax", "negative")])
    );
    let stable = observe("No significant interval change in moderate cardiomegaly.");
    assert_eq!(summary(&stable), pairs(&[("cardiomegaly", "positive")]));
    assert_eq!(stable[0].change.as_deref(), Some("unchanged"));
    let resolved = observe("The previously seen right pneumothorax has resolved.");
    assert_eq!(summary(&resolved), pairs(&[("pneumothorax", "negative")]));
    assert_eq!(resolved[0].change.as_deref(), Some("resolved"));
    assert_eq!(
        summary(&observe("There is possible mild cardiomegaly.")),
        pairs(&[("cardiomegaly", "possible")])
    );
    assert_eq!(
        summary(&observe("There is prominence of the superior mediastinum.")),
        pairs(&[("prominence of the superior mediastinum", "positive")])
    );
    assert_eq!(
        summary(&observe("The superior mediastinum is widened.")),
        pairs(&[("mediastinal widening", "positive")])
    );
    assert_eq!(
        summary(&observe("Left chest tube is in place.")),
        pairs(&[("chest tube", "positive")])
    );
}
