//! RadStrucVQA: one hand-computed fixture per row of table 18 (explicit evidence, so the
//! sub-metric definitions are tested apart from any entailer), F1 and the corpus aggregate, the
//! offline rules on realistic answers scored against themselves and against corrupted copies,
//! and the LLM prompt and answer parser.

use cxrlake_evaluate::masks::Rect;
use cxrlake_evaluate::radstruct::{
    Aggregate, Direction, ENTAILMENT_FEWSHOT, ENTAILMENT_SCHEMA, ENTAILMENT_SYSTEM, Evidence, Part,
    SampleScores, SubMetric, directional, entailment_prompt, entailment_task, ioh,
    offline_evidence, parse_entailment, score_sample,
};

/// Builders for answer parts.
trait Build: Sized {
    fn pos(self) -> Self;
    fn neg(self) -> Self;
    fn findings(self, tags: &[&str]) -> Self;
    fn regions(self, tags: &[&str]) -> Self;
    fn categories(self, tags: &[&str]) -> Self;
    fn subcategories(self, tags: &[&str]) -> Self;
    fn boxes(self, image: &str, boxes: &[(f64, f64, f64, f64)]) -> Self;
}

fn strings(tags: &[&str]) -> Vec<String> {
    tags.iter().map(|t| t.to_string()).collect()
}

impl Build for Part {
    fn pos(self) -> Self {
        Part {
            positive: Some(true),
            ..self
        }
    }
    fn neg(self) -> Self {
        Part {
            positive: Some(false),
            ..self
        }
    }
    fn findings(self, tags: &[&str]) -> Self {
        Part {
            findings: strings(tags),
            ..self
        }
    }
    fn regions(self, tags: &[&str]) -> Self {
        Part {
            regions: strings(tags),
            ..self
        }
    }
    fn categories(self, tags: &[&str]) -> Self {
        Part {
            categories: strings(tags),
            ..self
        }
    }
    fn subcategories(self, tags: &[&str]) -> Self {
        Part {
            subcategories: strings(tags),
            ..self
        }
    }
    fn boxes(mut self, image: &str, boxes: &[(f64, f64, f64, f64)]) -> Self {
        self.boxes.extend(
            boxes
                .iter()
                .map(|&(x1, y1, x2, y2)| (image.to_string(), Rect::new(x1, y1, x2, y2))),
        );
        self
    }
}

fn part(text: &str) -> Part {
    Part {
        text: text.into(),
        ..Part::default()
    }
}

/// ENTAILED with these (0-based) context parts as evidence.
fn yes(evidence: &[usize]) -> Evidence {
    Evidence {
        entailed: true,
        evidence: evidence.to_vec(),
    }
}

fn no() -> Evidence {
    Evidence::not_entailed()
}

/// (precision, recall) of one sub-metric.
fn pr(scores: &SampleScores, metric: SubMetric) -> (Option<f64>, Option<f64>) {
    (
        scores.value(Direction::Precision, metric),
        scores.value(Direction::Recall, metric),
    )
}

fn close(actual: Option<f64>, expected: f64) -> bool {
    actual.is_some_and(|a| (a - expected).abs() < 1e-12)
}

// ── table 18, row by row ─────────────────────────────────────────────────────────────────────

#[test]
fn logical_is_the_share_of_hypotheses_with_evidence() {
    let target = vec![
        part("Small left pleural effusion.").pos(),
        part("No pneumothorax.").neg(),
    ];
    let predicted = vec![
        part("Left effusion.").pos(),
        part("Cardiomegaly.").pos(),
        part("There is no pneumothorax.").neg(),
    ];
    // Precision: p0 ← t0, p1 ENTAILED but with no evidence (C[h] = {} → not entailed), p2 ← t1:
    // 2/3. Recall: t0 ← p0, t1 ← p2: 2/2. F1 = 2·(2/3)·1 / (2/3 + 1) = 0.8.
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[]), yes(&[1])],
        &[yes(&[0]), yes(&[2])],
    );
    let (p, r) = pr(&s, SubMetric::Logical);
    assert!(close(p, 2.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(1.0));
    assert!(close(s.value(Direction::F1, SubMetric::Logical), 0.8));
}

/// Targets and predictions with boxes on images `a` and `b` (grounding and spatial).
fn grounding_sample() -> (Vec<Part>, Vec<Part>, Vec<Evidence>, Vec<Evidence>) {
    let target = vec![
        // Area 200.
        part("Left lower lobe opacity.").boxes("a", &[(0.0, 0.0, 20.0, 10.0)]),
        part("Right pleural effusion.").boxes("a", &[(50.0, 0.0, 60.0, 10.0)]),
    ];
    let predicted = vec![
        // Half of its 200 inside t0's box: IoH 0.5, grounded (the threshold is inclusive).
        part("Opacity at the left base.").boxes("a", &[(10.0, 0.0, 30.0, 10.0)]),
        // Same coordinates as t0 but on image b: IoH 0, not grounded.
        part("Left basal opacity.").boxes("b", &[(0.0, 0.0, 20.0, 10.0)]),
        // Boxes, not entailed.
        part("Pneumothorax.").boxes("a", &[(0.0, 0.0, 20.0, 10.0)]),
        // Entailed, no boxes.
        part("Effusion on the right."),
        // Entailed, only a zero-area box: "has no boxes".
        part("Effusion.").boxes("a", &[(50.0, 0.0, 50.0, 10.0)]),
    ];
    let precision = vec![yes(&[0]), yes(&[0]), no(), yes(&[1]), yes(&[1])];
    // t0 ← p0, p1: p0 covers x ∈ [10, 20) of t0 on image a (100 of 200), p1 is on image b:
    // IoH 0.5, grounded. t1 ← p3, p4: no box area: IoH 0, not grounded.
    let recall = vec![yes(&[0, 1]), yes(&[3, 4])];
    (predicted, target, precision, recall)
}

#[test]
fn grounding_needs_half_of_the_boxes_inside_the_evidence() {
    let (predicted, target, precision, recall) = grounding_sample();
    let s = score_sample(&predicted, &target, &precision, &recall);
    // Relevant: boxes ∧ logical. Precision: p0 ✓, p1 ✗ (p2 not entailed, p3 and p4 without
    // boxes: not relevant) → 1/2. Recall: t0 ✓, t1 ✗ → 1/2.
    assert_eq!(pr(&s, SubMetric::Grounding), (Some(0.5), Some(0.5)));
    assert_eq!(ioh(&target[0], &[&predicted[0], &predicted[1]]), 0.5);
}

#[test]
fn spatial_is_grounding_over_every_hypothesis_with_boxes() {
    let (predicted, target, precision, recall) = grounding_sample();
    let s = score_sample(&predicted, &target, &precision, &recall);
    // Relevant: boxes. Precision: p0 ✓ of p0, p1, p2 (the not entailed p2 counts) → 1/3.
    // Recall: t0 ✓ of t0, t1 → 1/2.
    let (p, r) = pr(&s, SubMetric::Spatial);
    assert!(close(p, 1.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(0.5));
    // Without boxes anywhere, both are undefined.
    let plain = vec![part("Effusion.").pos()];
    let s = score_sample(&plain, &plain, &[yes(&[0])], &[yes(&[0])]);
    assert_eq!(pr(&s, SubMetric::Spatial), (None, None));
    assert_eq!(pr(&s, SubMetric::Grounding), (None, None));
}

#[test]
fn finding_tags_must_be_in_evidence_of_the_same_positiveness() {
    let target = vec![
        part("Small left pleural effusion.")
            .pos()
            .findings(&["pleural effusion"]),
        part("No pneumothorax.").neg().findings(&["pneumothorax"]),
        part("Mild cardiomegaly.").pos().findings(&["cardiomegaly"]),
    ];
    let predicted = vec![
        // Both tags in its (positive) evidence t0, t2; tags compare trimmed, case-insensitively.
        part("Left effusion and cardiomegaly.")
            .pos()
            .findings(&["Pleural Effusion ", "cardiomegaly"]),
        // Its tag is only in evidence of the opposite positiveness.
        part("Pneumothorax is present.")
            .pos()
            .findings(&["pneumothorax"]),
        // One of two tags missing.
        part("Effusion with atelectasis.")
            .pos()
            .findings(&["pleural effusion", "atelectasis"]),
        // No finding tags: not relevant.
        part("Heart size is normal."),
        // Tagged, not entailed.
        part("Possible edema.").pos().findings(&["edema"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0, 2]), yes(&[1]), yes(&[0]), yes(&[2]), no()],
        // t0 ← p0 ✓; t1 (negative) ← p1 (positive) ✗; t2 ← p0 ✓.
        &[yes(&[0]), yes(&[1]), yes(&[0])],
    );
    // Precision 1/4 (p0 of p0, p1, p2, p4), recall 2/3.
    let (p, r) = pr(&s, SubMetric::Finding);
    assert_eq!(p, Some(0.25));
    assert!(close(r, 2.0 / 3.0), "{r:?}");
}

#[test]
fn finding_pos_counts_positive_hypotheses_only() {
    let target = vec![
        part("No pneumothorax.").neg().findings(&["pneumothorax"]),
        part("Right pleural effusion.")
            .pos()
            .findings(&["pleural effusion"]),
    ];
    let predicted = vec![
        part("There is no pneumothorax.")
            .neg()
            .findings(&["pneumothorax"]),
        part("Right effusion.")
            .pos()
            .findings(&["pleural effusion"]),
        part("Right effusion with consolidation.")
            .pos()
            .findings(&["pleural effusion", "consolidation"]),
        part("No edema.").neg().findings(&["edema"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[1]), no()],
        &[yes(&[0]), yes(&[1, 2])],
    );
    // finding: p0 ✓ p1 ✓ p2 ✗ p3 ✗ → 1/2; finding-pos: p1 ✓ p2 ✗ → 1/2.
    // Recall: finding t0 ✓ t1 ✓ → 1; finding-pos: only t1 → 1.
    assert_eq!(pr(&s, SubMetric::Finding), (Some(0.5), Some(1.0)));
    assert_eq!(pr(&s, SubMetric::FindingPos), (Some(0.5), Some(1.0)));
}

#[test]
fn region_tags_must_be_in_evidence_of_the_same_positiveness() {
    let target = vec![
        part("Left lower lobe atelectasis.")
            .pos()
            .regions(&["left lower lobe"]),
        part("No right effusion.")
            .neg()
            .regions(&["right pleural space"]),
    ];
    let predicted = vec![
        // "left lung" is not in the evidence.
        part("Left basilar atelectasis.")
            .pos()
            .regions(&["left lower lobe", "left lung"]),
        part("Atelectasis in the left lower lobe.")
            .pos()
            .regions(&["Left Lower Lobe"]),
        part("No right pleural effusion.")
            .neg()
            .regions(&["right pleural space"]),
        // No region tags: not relevant.
        part("No effusion.").neg(),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[0]), yes(&[1]), yes(&[1])],
        &[yes(&[0, 1]), yes(&[2])],
    );
    // Precision: p0 ✗ p1 ✓ p2 ✓ → 2/3. Recall: t0 ✓ (in p0 and p1) t1 ✓ → 1.
    let (p, r) = pr(&s, SubMetric::Region);
    assert!(close(p, 2.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(1.0));
}

#[test]
fn region_pos_counts_positive_hypotheses_only() {
    let target = vec![
        part("Left lower lobe atelectasis.")
            .pos()
            .regions(&["left lower lobe"]),
        part("No right effusion.")
            .neg()
            .regions(&["right pleural space"]),
    ];
    let predicted = vec![
        part("Left lower lobe atelectasis.")
            .pos()
            .regions(&["left lower lobe"]),
        // Wrong region, but negative: relevant for region only.
        part("No right pleural effusion.")
            .neg()
            .regions(&["right lung"]),
        part("Right upper lobe nodule.")
            .pos()
            .regions(&["right upper lobe"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), no()],
        &[yes(&[0]), yes(&[1])],
    );
    // region: p0 ✓ p1 ✗ p2 ✗ → 1/3; t0 ✓ t1 ✗ → 1/2.
    // region-pos: p0 ✓ p2 ✗ → 1/2; t0 ✓ → 1.
    let (p, r) = pr(&s, SubMetric::Region);
    assert!(close(p, 1.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(0.5));
    assert_eq!(pr(&s, SubMetric::RegionPos), (Some(0.5), Some(1.0)));
}

#[test]
fn main_category_tags_may_come_from_several_evidence_parts() {
    let target = vec![
        part("Right lower lobe pneumonia.")
            .pos()
            .categories(&["ANATOMICAL_FINDING", "DISEASE"]),
        part("Endotracheal tube in place.")
            .pos()
            .categories(&["TUBES_LINES"]),
    ];
    let predicted = vec![
        part("Pneumonia in the right lower lobe.")
            .pos()
            .categories(&["DISEASE"]),
        part("ET tube is present.")
            .pos()
            .categories(&["TUBES_LINES", "DEVICE"]),
        part("Right basal opacity.")
            .pos()
            .categories(&["ANATOMICAL_FINDING"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[0])],
        // t0 ← p0 (DISEASE) and p2 (ANATOMICAL_FINDING): both tags covered.
        &[yes(&[0, 2]), yes(&[1])],
    );
    // Precision: p0 ✓ p1 ✗ (DEVICE) p2 ✓ → 2/3. Recall: 1.
    let (p, r) = pr(&s, SubMetric::MainCategory);
    assert!(close(p, 2.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(1.0));
}

#[test]
fn main_category_pos_counts_positive_hypotheses_only() {
    let target = vec![
        part("No pneumothorax.")
            .neg()
            .categories(&["ANATOMICAL_FINDING"]),
        part("Cardiomegaly.")
            .pos()
            .categories(&["ANATOMICAL_FINDING"]),
    ];
    let predicted = vec![
        // DISEASE missing; negative.
        part("No pneumothorax.")
            .neg()
            .categories(&["ANATOMICAL_FINDING", "DISEASE"]),
        part("Enlarged heart.")
            .pos()
            .categories(&["ANATOMICAL_FINDING"]),
        // Evidence of the opposite positiveness only.
        part("Cardiomegaly.")
            .pos()
            .categories(&["ANATOMICAL_FINDING"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[0])],
        &[yes(&[0]), yes(&[1, 2])],
    );
    // main-category: p0 ✗ p1 ✓ p2 ✗ → 1/3; recall t0 ✓ t1 ✓ → 1.
    // main-category-pos: p1 ✓ p2 ✗ → 1/2; recall t1 ✓ → 1.
    let (p, r) = pr(&s, SubMetric::MainCategory);
    assert!(close(p, 1.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(1.0));
    assert_eq!(pr(&s, SubMetric::MainCategoryPos), (Some(0.5), Some(1.0)));
}

#[test]
fn sub_category_tags_must_all_be_in_the_evidence() {
    let target = vec![
        part("Left pleural effusion.")
            .pos()
            .subcategories(&["PLEURA"]),
        part("Pulmonary edema.")
            .pos()
            .subcategories(&["LUNG_FIELD", "PULMONARY_DISEASES"]),
    ];
    let predicted = vec![
        part("Effusion on the left.")
            .pos()
            .subcategories(&["pleura"]),
        part("Edema.").pos().subcategories(&["LUNG_FIELD"]),
        part("Interstitial edema.")
            .pos()
            .subcategories(&["LUNG_FIELD", "INTERSTITIUM"]),
        part("Pneumonia.")
            .pos()
            .subcategories(&["PULMONARY_DISEASES"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[1]), no()],
        // t1 ← p1, p2: PULMONARY_DISEASES is in neither.
        &[yes(&[0]), yes(&[1, 2])],
    );
    // Precision: p0 ✓ p1 ✓ p2 ✗ p3 ✗ → 1/2. Recall: t0 ✓ t1 ✗ → 1/2.
    assert_eq!(pr(&s, SubMetric::SubCategory), (Some(0.5), Some(0.5)));
}

#[test]
fn sub_category_pos_counts_positive_hypotheses_only() {
    let target = vec![
        part("No pleural effusion.")
            .neg()
            .subcategories(&["PLEURA"]),
        part("Atelectasis.").pos().subcategories(&["LUNG_FIELD"]),
    ];
    let predicted = vec![
        part("No effusion.").neg().subcategories(&["PLEURA"]),
        part("Atelectasis at the bases.")
            .pos()
            .subcategories(&["LUNG_FIELD", "AIRWAYS"]),
        part("Bibasilar atelectasis.")
            .pos()
            .subcategories(&["LUNG_FIELD"]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[1])],
        &[yes(&[0]), yes(&[1])],
    );
    // sub-category: p0 ✓ p1 ✗ p2 ✓ → 2/3; recall 1.
    // sub-category-pos: p1 ✗ p2 ✓ → 1/2; recall t1 ✓ → 1.
    let (p, r) = pr(&s, SubMetric::SubCategory);
    assert!(close(p, 2.0 / 3.0), "{p:?}");
    assert_eq!(r, Some(1.0));
    assert_eq!(pr(&s, SubMetric::SubCategoryPos), (Some(0.5), Some(1.0)));
}

#[test]
fn bbox_pos_entity_needs_the_finding_and_the_box() {
    let target = vec![
        part("Left pleural effusion.")
            .pos()
            .findings(&["pleural effusion"])
            .boxes("a", &[(0.0, 0.0, 10.0, 10.0)]),
        part("Right lower lobe consolidation.")
            .pos()
            .findings(&["consolidation"])
            .boxes("a", &[(50.0, 50.0, 70.0, 70.0)]),
        part("No pneumothorax.")
            .neg()
            .findings(&["pneumothorax"])
            .boxes("a", &[(0.0, 0.0, 100.0, 100.0)]),
    ];
    let predicted = vec![
        // Finding ✓, grounding ✓.
        part("Left effusion.")
            .pos()
            .findings(&["pleural effusion"])
            .boxes("a", &[(0.0, 0.0, 10.0, 10.0)]),
        // Finding ✓, box outside: grounding ✗.
        part("Right basal consolidation.")
            .pos()
            .findings(&["consolidation"])
            .boxes("a", &[(80.0, 80.0, 90.0, 90.0)]),
        // Box ✓, finding ✗.
        part("Right basal pneumonia.")
            .pos()
            .findings(&["pneumonia"])
            .boxes("a", &[(50.0, 50.0, 70.0, 70.0)]),
        // Negative: not relevant.
        part("No pneumothorax.")
            .neg()
            .findings(&["pneumothorax"])
            .boxes("a", &[(0.0, 0.0, 100.0, 100.0)]),
        // No boxes: not relevant.
        part("Left effusion.").pos().findings(&["pleural effusion"]),
        // Relevant, not entailed.
        part("Cardiomegaly.")
            .pos()
            .findings(&["cardiomegaly"])
            .boxes("a", &[(20.0, 20.0, 40.0, 40.0)]),
    ];
    let s = score_sample(
        &predicted,
        &target,
        &[yes(&[0]), yes(&[1]), yes(&[1]), yes(&[2]), yes(&[0]), no()],
        // t0 ← p0, p4: tag ✓, inside p0's box ✓. t1 ← p1, p2: tag in p1, box inside p2's ✓.
        &[yes(&[0, 4]), yes(&[1, 2]), yes(&[3])],
    );
    // Precision: p0 ✓ of p0, p1, p2, p5 → 1/4. Recall: t0 ✓ t1 ✓ (t2 negative) → 1.
    assert_eq!(pr(&s, SubMetric::BboxPosEntity), (Some(0.25), Some(1.0)));
}

// ── sample F1 and the corpus aggregate ───────────────────────────────────────────────────────

#[test]
fn f1_is_the_per_sample_harmonic_mean_where_both_sides_are_defined() {
    let target = vec![
        part("Left effusion.").pos().findings(&["pleural effusion"]),
        part("No pneumothorax.").neg(),
    ];
    let predicted = vec![part("Left effusion.").pos()];
    let s = score_sample(&predicted, &target, &[no()], &[no(), no()]);
    // Logical: p = 0, r = 0 → F1 0. Finding: no prediction has finding tags → precision None,
    // recall 0 → F1 None.
    assert_eq!(s.value(Direction::F1, SubMetric::Logical), Some(0.0));
    assert_eq!(pr(&s, SubMetric::Finding), (None, Some(0.0)));
    assert_eq!(s.value(Direction::F1, SubMetric::Finding), None);
    // Missing evidence entries are NOT_ENTAILED; indices past the context are dropped.
    let scores = directional(&target, &predicted, &[yes(&[0, 7])]);
    assert_eq!(scores[SubMetric::Logical.index()], Some(0.5));
    let scores = directional(&target, &predicted, &[yes(&[7])]);
    assert_eq!(scores[SubMetric::Logical.index()], Some(0.0));
}

#[test]
fn the_aggregate_averages_defined_scores_and_counts_the_rest() {
    let none = [None; 12];
    let with = |logical: f64, finding: Option<f64>| {
        let mut scores = none;
        scores[SubMetric::Logical.index()] = Some(logical);
        scores[SubMetric::Finding.index()] = finding;
        SampleScores {
            precision: scores,
            recall: scores,
            f1: scores,
        }
    };
    let mut aggregate = Aggregate::new();
    aggregate.push(&with(1.0, Some(0.5)));
    aggregate.push(&with(0.5, None));
    aggregate.push(&with(0.0, Some(1.0)));
    aggregate.push_invalid();
    for direction in Direction::ALL {
        assert_eq!(aggregate.mean(direction, SubMetric::Logical), Some(0.5));
        assert_eq!(aggregate.count(direction, SubMetric::Logical), 3);
        assert_eq!(aggregate.mean(direction, SubMetric::Finding), Some(0.75));
        assert_eq!(aggregate.count(direction, SubMetric::Finding), 2);
        assert_eq!(aggregate.without_relevant(direction, SubMetric::Finding), 1);
        assert_eq!(aggregate.mean(direction, SubMetric::Grounding), None);
    }
    assert_eq!((aggregate.samples(), aggregate.invalid()), (3, 1));
    assert_eq!(
        SubMetric::ALL.map(SubMetric::name).join(","),
        "logical,grounding,spatial,finding,finding-pos,region,region-pos,main-category,\
         main-category-pos,sub-category,sub-category-pos,bbox-pos-entity"
    );
    assert!(
        SubMetric::ALL
            .iter()
            .enumerate()
            .all(|(k, m)| m.index() == k)
    );
}

// ── the offline rules ────────────────────────────────────────────────────────────────────────

#[test]
fn offline_rules_on_paraphrases_contradictions_and_tags() {
    let effusion =
        |text: &str, side: &str| part(text).findings(&["pleural effusion"]).regions(&[side]);
    let context = vec![
        effusion("Small left pleural effusion.", "left pleura").pos(),
        effusion("No right pleural effusion.", "right pleura").neg(),
        part("No pneumothorax.").neg().findings(&["pneumothorax"]),
        part("The heart size is normal.").regions(&["heart"]),
        part("Left pleural thickening.")
            .pos()
            .findings(&["pleural thickening"]),
    ];
    let hypotheses = vec![
        // Shared finding, same positiveness; the negative right-sided part is elsewhere.
        effusion("Yes, there is a left effusion.", "left pleura").pos(),
        // Negation words aside, the same words.
        part("There is no evidence of pneumothorax.")
            .neg()
            .findings(&["pneumothorax"]),
        // Contradicted by the positive effusion (no region on h: everywhere).
        part("No pleural effusion.")
            .neg()
            .findings(&["pleural effusion"]),
        // Untagged paraphrase (Jaccard {heart, size, normal} = 1) and untagged same region.
        part("Heart size normal."),
        part("Normal cardiac silhouette.").regions(&["heart"]),
        // Jaccard with c4 {left, pleural} / {left, pleural, mass, thickening} = 0.5, but both
        // are tagged with different findings: no support.
        part("Left pleural mass.").pos().findings(&["mass"]),
        // Supported by the left effusion (shared finding) but contradicted by the negative
        // right-sided one (shared finding and region).
        effusion("Right pleural effusion.", "right pleura").pos(),
        // Nothing alike.
        part("Cardiomegaly.").pos().findings(&["cardiomegaly"]),
    ];
    let evidence = offline_evidence(&hypotheses, &context);
    assert_eq!(
        evidence,
        vec![
            yes(&[0]),
            yes(&[2]),
            no(),
            yes(&[3]),
            yes(&[3]),
            no(),
            no(),
            no()
        ]
    );
}

/// Realistic answers as the lake holds them: (question, parts) with boxes on image `img1`.
fn samples() -> Vec<Vec<Part>> {
    let effusion = || {
        part("Yes, there is a small left pleural effusion.")
            .pos()
            .findings(&["pleural effusion"])
            .regions(&["left costophrenic angle"])
            .categories(&["ANATOMICAL_FINDING"])
            .subcategories(&["PLEURA"])
            .boxes("img1", &[(300.0, 600.0, 480.0, 760.0)])
    };
    vec![
        // Is there a pleural effusion? Left yes, right no.
        vec![
            effusion(),
            part("No pleural effusion on the right.")
                .neg()
                .findings(&["pleural effusion"])
                .regions(&["right costophrenic angle"])
                .categories(&["ANATOMICAL_FINDING"])
                .subcategories(&["PLEURA"])
                .boxes("img1", &[(40.0, 600.0, 200.0, 760.0)]),
        ],
        // What are the findings in the lungs?
        vec![
            effusion(),
            part("Patchy opacity in the left lower lobe, likely atelectasis.")
                .pos()
                .findings(&["atelectasis", "opacity"])
                .regions(&["left lower lobe"])
                .categories(&["ANATOMICAL_FINDING", "DISEASE"])
                .subcategories(&["LUNG_FIELD", "PULMONARY_DISEASES"])
                .boxes(
                    "img1",
                    &[(280.0, 450.0, 470.0, 700.0), (300.0, 500.0, 420.0, 650.0)],
                ),
            part("No pneumothorax.")
                .neg()
                .findings(&["pneumothorax"])
                .regions(&["lungs"])
                .categories(&["ANATOMICAL_FINDING"])
                .subcategories(&["PLEURA"])
                .boxes("img1", &[(30.0, 80.0, 490.0, 760.0)]),
        ],
        // Is the heart enlarged? Polarity-free statement with a region and a box.
        vec![
            part("The heart size is normal.")
                .regions(&["heart"])
                .categories(&["ANATOMICAL_FINDING"])
                .boxes("img1", &[(180.0, 350.0, 380.0, 620.0)]),
        ],
        // Tubes and lines, two images.
        vec![
            part("An endotracheal tube terminates 4 cm above the carina.")
                .pos()
                .findings(&["endotracheal tube"])
                .regions(&["trachea"])
                .categories(&["TUBES_LINES"])
                .subcategories(&["AIRWAY_DEVICES"])
                .boxes("img1", &[(230.0, 60.0, 270.0, 300.0)])
                .boxes("img2", &[(200.0, 40.0, 260.0, 280.0)]),
            part("No central venous catheter.")
                .neg()
                .findings(&["central venous catheter"])
                .categories(&["TUBES_LINES"]),
        ],
        // A self-contradicting answer still scores 1 against itself.
        vec![
            part("Small pneumothorax.")
                .pos()
                .findings(&["pneumothorax"]),
            part("No pneumothorax.").neg().findings(&["pneumothorax"]),
        ],
    ]
}

fn offline(predicted: &[Part], target: &[Part]) -> SampleScores {
    score_sample(
        predicted,
        target,
        &offline_evidence(predicted, target),
        &offline_evidence(target, predicted),
    )
}

fn aggregate(predicted: &[Vec<Part>], target: &[Vec<Part>]) -> Aggregate {
    let mut aggregate = Aggregate::new();
    for (p, t) in predicted.iter().zip(target) {
        aggregate.push(&offline(p, t));
    }
    aggregate
}

#[test]
fn answers_against_themselves_score_one_everywhere() {
    let samples = samples();
    for sample in &samples {
        let s = offline(sample, sample);
        for direction in Direction::ALL {
            for metric in SubMetric::ALL {
                let value = s.value(direction, metric);
                assert!(
                    value.is_none() || value == Some(1.0),
                    "{} {}: {value:?} for {sample:?}",
                    metric.name(),
                    direction.name()
                );
            }
        }
    }
    // Every sub-metric is defined somewhere, so the check above covers all twelve.
    let all = aggregate(&samples, &samples);
    for metric in SubMetric::ALL {
        assert_eq!(
            all.mean(Direction::F1, metric),
            Some(1.0),
            "{}",
            metric.name()
        );
    }
}

fn mean(aggregate: &Aggregate, direction: Direction, metric: SubMetric) -> f64 {
    aggregate
        .mean(direction, metric)
        .unwrap_or_else(|| panic!("{} {} undefined", metric.name(), direction.name()))
}

#[test]
fn flipped_polarity_lowers_logical_and_finding_pos() {
    let target = samples();
    let flipped: Vec<Vec<Part>> = samples()
        .into_iter()
        .map(|parts| {
            parts
                .into_iter()
                .map(|p| Part {
                    positive: p.positive.map(|v| !v),
                    ..p
                })
                .collect()
        })
        .collect();
    let scores = aggregate(&flipped, &target);
    for direction in [Direction::Precision, Direction::Recall] {
        for metric in [SubMetric::Logical, SubMetric::FindingPos] {
            let value = mean(&scores, direction, metric);
            assert!(
                value < 1.0,
                "{} {}: {value}",
                metric.name(),
                direction.name()
            );
        }
    }
}

#[test]
fn shifted_boxes_lower_the_box_metrics_only() {
    let target = samples();
    let shifted: Vec<Vec<Part>> = samples()
        .into_iter()
        .map(|parts| {
            parts
                .into_iter()
                .map(|mut p| {
                    for (_, rect) in &mut p.boxes {
                        *rect = Rect::new(rect.x1 + 1000.0, rect.y1, rect.x2 + 1000.0, rect.y2);
                    }
                    p
                })
                .collect()
        })
        .collect();
    let scores = aggregate(&shifted, &target);
    for direction in [Direction::Precision, Direction::Recall] {
        for metric in [
            SubMetric::Grounding,
            SubMetric::Spatial,
            SubMetric::BboxPosEntity,
        ] {
            assert!(mean(&scores, direction, metric) < 1.0, "{}", metric.name());
        }
        for metric in [SubMetric::Logical, SubMetric::Finding, SubMetric::Region] {
            assert_eq!(mean(&scores, direction, metric), 1.0, "{}", metric.name());
        }
    }
}

#[test]
fn dropped_finding_tags_lower_finding_only() {
    let target = samples();
    let untagged: Vec<Vec<Part>> = samples()
        .into_iter()
        .map(|parts| {
            parts
                .into_iter()
                .map(|p| Part {
                    findings: Vec::new(),
                    ..p
                })
                .collect()
        })
        .collect();
    let scores = aggregate(&untagged, &target);
    // The targets' finding tags are missing from their evidence (recall); no prediction has
    // finding tags left, so finding precision is undefined.
    assert!(mean(&scores, Direction::Recall, SubMetric::Finding) < 1.0);
    assert_eq!(scores.mean(Direction::Precision, SubMetric::Finding), None);
    for direction in [Direction::Precision, Direction::Recall] {
        for metric in [SubMetric::Logical, SubMetric::Grounding, SubMetric::Region] {
            assert_eq!(mean(&scores, direction, metric), 1.0, "{}", metric.name());
        }
    }
}

// ── the LLM prompt and its answers ───────────────────────────────────────────────────────────

#[test]
fn the_prompt_lists_texts_only_and_inserts_the_examples_once() {
    let context = vec![
        part("Small left\npleural effusion.")
            .pos()
            .findings(&["pleural effusion"])
            .boxes("img1", &[(1.0, 2.0, 3.0, 4.0)]),
        part("No pneumothorax.").neg(),
    ];
    let hypotheses = vec![part("Left effusion <FEWSHOT>.").pos()];
    let prompt = entailment_prompt(ENTAILMENT_SYSTEM, ENTAILMENT_FEWSHOT, &hypotheses, &context);
    assert!(prompt.contains("### Example 1"));
    assert_eq!(prompt.matches("### Example 1").count(), 1);
    assert!(prompt.ends_with(
        "Reference phrases:\n1. Small left pleural effusion.\n2. No pneumothorax.\n\n\
         Hypothesis phrases:\n1. Left effusion <FEWSHOT>.\n\nAnswer:\n"
    ));
    // Substituted once: only the hypothesis' own text still holds the placeholder.
    assert_eq!(prompt.matches("<FEWSHOT>").count(), 1);
    assert!(!prompt.contains("pleural effusion\"") && !prompt.contains("img1"));
    // Without a placeholder the examples follow the system text.
    assert_eq!(
        entailment_prompt("System.", "Examples.", &[], &[]),
        "System.\n\nExamples.\n\nReference phrases:\n(none)\n\nHypothesis phrases:\n(none)\n\n\
         Answer:\n"
    );
}

#[test]
fn the_worked_examples_parse_and_follow_the_task_format() {
    let schema: serde_json::Value = serde_json::from_str(ENTAILMENT_SCHEMA).expect("schema");
    assert_eq!(schema["required"][0], "phrases");
    let examples: Vec<&str> = ENTAILMENT_FEWSHOT.split("### Example").skip(1).collect();
    assert!(examples.len() >= 3, "{}", examples.len());
    let mut statuses = (0, 0);
    for example in examples {
        let (phrases, answer) = example.split_once("Answer:\n").expect("an answer");
        let (references, hypotheses) = phrases
            .split_once("Reference phrases:\n")
            .and_then(|(_, rest)| rest.split_once("\nHypothesis phrases:\n"))
            .expect("both phrase lists");
        let numbered = |list: &str| -> Vec<Part> {
            list.lines()
                .filter_map(|line| line.split_once(". "))
                .map(|(_, text)| part(text))
                .collect()
        };
        let (references, hypotheses) = (numbered(references), numbered(hypotheses));
        // The example is written exactly as entailment_task would write it.
        assert!(
            example.contains(&entailment_task(&hypotheses, &references)),
            "{example}"
        );
        let evidence = parse_entailment(answer, hypotheses.len(), references.len())
            .unwrap_or_else(|e| panic!("{e}: {answer}"));
        for e in evidence {
            assert_eq!(e.entailed, !e.evidence.is_empty(), "{answer}");
            if e.entailed {
                statuses.0 += 1;
            } else {
                statuses.1 += 1;
            }
        }
    }
    assert!(statuses.0 > 0 && statuses.1 > 0, "{statuses:?}");
}

#[test]
fn entailment_answers_parse_tolerantly() {
    let answer = "Here is my assessment:\n```json\n{\"phrases\": [\
                  {\"index\": 2, \"status\": \"not entailed\", \"evidence\": [1]}, \
                  {\"index\": \"1\", \"status\": \"Entailed\", \"evidence\": [3, \"2\", 3]}]}\n```\n";
    // 1-based in the answer, 0-based out; in hypothesis order; NOT_ENTAILED drops evidence.
    assert_eq!(
        parse_entailment(answer, 2, 3).expect("parses"),
        vec![yes(&[1, 2]), no()]
    );
    assert_eq!(
        parse_entailment(
            "{\"phrases\": [{\"index\": 1, \"status\": \"ENTAILED\"}]}",
            1,
            1
        )
        .expect("no evidence key"),
        vec![yes(&[])]
    );
    assert_eq!(
        parse_entailment("{\"phrases\": []}", 0, 0).expect("empty"),
        vec![]
    );
}

#[test]
fn unusable_entailment_answers_are_errors() {
    let phrase = |index: &str, status: &str, evidence: &str| {
        format!("{{\"index\": {index}, \"status\": \"{status}\", \"evidence\": [{evidence}]}}")
    };
    let answer = |phrases: &[String]| format!("{{\"phrases\": [{}]}}", phrases.join(", "));
    let ok = phrase("1", "ENTAILED", "1");
    for (bad, why) in [
        ("no json here".to_string(), "no JSON object"),
        ("{\"phrases\": [}".to_string(), "does not parse"),
        ("{\"answers\": []}".to_string(), "no \"phrases\""),
        (answer(std::slice::from_ref(&ok)), "1 phrases judged for 2"),
        (
            answer(&[ok.clone(), phrase("2", "MAYBE", "")]),
            "unknown status",
        ),
        (
            answer(&[ok.clone(), phrase("3", "ENTAILED", "1")]),
            "hypothesis number 3 out of range",
        ),
        (
            answer(&[ok.clone(), phrase("0", "ENTAILED", "1")]),
            "hypothesis number 0 out of range",
        ),
        (
            answer(&[ok.clone(), phrase("2", "ENTAILED", "4")]),
            "reference number 4 out of range 1..=3",
        ),
        (answer(&[ok.clone(), ok.clone()]), "judged twice"),
    ] {
        let error = parse_entailment(&bad, 2, 3).expect_err(&bad).to_string();
        assert!(error.contains(why), "{bad}: {error}");
    }
}
