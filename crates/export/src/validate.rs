//! Checks exported JSON values against the release layouts: every key present and no other
//! (cxrlake's `extractor` and `embedder` are allowed at a scene graph's root and on each
//! question), JSON types, dict keys equal to the ids of their values, enumerations, boxes of
//! four numbers; then each layout's own rules — for scene graphs (D.1), ids that point at
//! existing nodes; for QA files (D.2), question ids, the answer hierarchy and the images of
//! localizations. `extractor` and `embedder` may be absent, so files of the original release
//! pass these checks too. Quality levels must be the integer values of their aspect
//! ([`cxrlake_schemas::quality`]), ratings release codes (`4_A`, `0_not rated`).

use std::collections::HashSet;

use cxrlake_schemas::Rating;
use cxrlake_schemas::quality::{self, Aspect};
use serde_json::{Map, Value};

use crate::layout::{self, Node, Scalar, Shape};
use crate::{d1, d2};

/// Every deviation of `value`, a parsed `*.qa.json` file, from the D.2 layout, as
/// `path: problem` lines (`questions[3].answers[0].sub_answers[1].answer_level: 2, expected 1`);
/// empty when it conforms. Beyond keys, JSON types and enumerations: each question id is
/// `<question_type>_<NNN>` and unique in the file, answer ids are unique within their question,
/// top-level parts have level 0 and each sub-answer its parent's level + 1, each question has a
/// main answer, `contains_report_answers`/`contains_template_answers` agree with the parts'
/// `from_report`, and every image of a localization has a
/// `question_img_localization_quality` entry.
pub fn validate_qa(value: &Value) -> Vec<String> {
    let mut validator = Validator::default();
    validator.object(&layout::QA_FILE, value, "");
    let questions = value.get("questions").and_then(Value::as_array);
    let mut question_ids = HashSet::new();
    for (i, question) in questions.into_iter().flatten().enumerate() {
        let path = format!("questions[{i}]");
        if let Some(id) = question.get("question_id").and_then(Value::as_str)
            && !question_ids.insert(id)
        {
            validator.report(
                &path,
                format!("question_id {id} is not unique in the study"),
            );
        }
        validator.question(question, &path);
    }
    validator.deviations
}

/// Every deviation of `value` from the D.1 scene graph layout, as `path: problem` lines
/// (`observations.O01.child_level: expected an integer, found string`); empty when it conforms.
pub fn validate_scene_graph(value: &Value) -> Vec<String> {
    let mut validator = Validator::default();
    validator.object(&layout::ROOT, value, "");
    if let Value::Object(root) = value {
        validator.references(root);
    }
    validator.deviations
}

#[derive(Default)]
struct Validator {
    deviations: Vec<String>,
}

/// What the answer parts of one question showed so far.
#[derive(Default)]
struct Parts<'v> {
    /// Images of `question_img_localization_quality`.
    images: HashSet<&'v str>,
    ids: HashSet<i64>,
    main_answer: bool,
    from_report: bool,
    from_template: bool,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `aspect`'s values, worst first: `0, 1, 2`.
fn level_values(aspect: &Aspect) -> String {
    let values: Vec<String> = aspect.levels.iter().map(|l| l.value.to_string()).collect();
    values.join(", ")
}

/// Whether `code` is a rating's release code (`4_A`).
fn is_release_code(code: &str) -> bool {
    Rating::ALL
        .iter()
        .any(|rating| rating.release_code() == code)
}

fn is_prefixed_number(id: &str, prefix: char) -> bool {
    id.strip_prefix(prefix)
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

impl Validator {
    fn report(&mut self, path: &str, problem: impl std::fmt::Display) {
        let path = if path.is_empty() { "(root)" } else { path };
        self.deviations.push(format!("{path}: {problem}"));
    }

    fn object(&mut self, node: &Node, value: &Value, path: &str) {
        let Value::Object(map) = value else {
            let found = json_type(value);
            self.report(
                path,
                format!("expected a {} dict, found {found}", node.name),
            );
            return;
        };
        // The provenance keys are allowed, not required (release files lack them).
        let optional = node.optional_keys();
        for (key, shape) in node.fields {
            match map.get(*key) {
                Some(inner) => self.shape(*shape, inner, &join(path, key)),
                None if optional.contains(key) => {}
                None => self.report(path, format!("missing key `{key}`")),
            }
        }
        for key in map.keys() {
            if node.keys().all(|known| known != key) {
                self.report(path, format!("unknown key `{key}`"));
            }
        }
    }

    fn list<'v>(&mut self, value: &'v Value, path: &str) -> &'v [Value] {
        match value {
            Value::Array(items) => items,
            other => {
                self.report(path, format!("expected a list, found {}", json_type(other)));
                &[]
            }
        }
    }

    fn dict<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.report(path, format!("expected a dict, found {}", json_type(other)));
                None
            }
        }
    }

    fn shape(&mut self, shape: Shape, value: &Value, path: &str) {
        match shape {
            Shape::Scalar(scalar) => self.scalar(scalar, value, path),
            Shape::List(scalar) => {
                for (i, item) in self.list(value, path).iter().enumerate() {
                    self.scalar(scalar, item, &format!("{path}[{i}]"));
                }
            }
            Shape::Boxes => {
                for (i, bbox) in self.list(value, path).iter().enumerate() {
                    let is_box = bbox
                        .as_array()
                        .is_some_and(|xs| xs.len() == 4 && xs.iter().all(Value::is_number));
                    if !is_box {
                        self.report(
                            &format!("{path}[{i}]"),
                            format!("expected a box [x1, y1, x2, y2] of 4 numbers, found {bbox}"),
                        );
                    }
                }
            }
            Shape::Objects(node) => {
                for (i, item) in self.list(value, path).iter().enumerate() {
                    self.object(node, item, &format!("{path}[{i}]"));
                }
            }
            Shape::Dict(node, id_key) => {
                let Some(map) = self.dict(value, path) else {
                    return;
                };
                for (key, item) in map {
                    let item_path = join(path, key);
                    self.object(node, item, &item_path);
                    if let Some(id) = item.get(id_key).filter(|id| id.as_str() != Some(key)) {
                        self.report(
                            &item_path,
                            format!("dict key `{key}` differs from its {id_key} {id}"),
                        );
                    }
                }
            }
            Shape::LevelDict => {
                let Some(map) = self.dict(value, path) else {
                    return;
                };
                for (image_id, level) in map {
                    let level_kind = Scalar::Level(&quality::LOCALIZATION);
                    self.scalar(level_kind, level, &join(path, image_id));
                }
            }
            Shape::Optional(node) => {
                if !value.is_null() {
                    self.object(node, value, path);
                }
            }
            Shape::Fixed(node) => self.object(node, value, path),
            Shape::Variables => {
                let Some(map) = self.dict(value, path) else {
                    return;
                };
                if map.contains_key("") {
                    self.report(path, "a variable has an empty name");
                }
            }
            Shape::Pairs(kinds) => {
                for (i, pair) in self.list(value, path).iter().enumerate() {
                    let pair_path = format!("{path}[{i}]");
                    match pair.as_array().filter(|items| items.len() == 2) {
                        Some(items) => {
                            for (j, ((_, kind), item)) in kinds.iter().zip(items).enumerate() {
                                self.scalar(*kind, item, &format!("{pair_path}[{j}]"));
                            }
                        }
                        None => self.report(
                            &pair_path,
                            format!("expected a pair [type, value], found {pair}"),
                        ),
                    }
                }
            }
            Shape::QualityWithLocalization(_) => {
                self.object(&layout::EXTRACTION_QUALITY, value, path);
            }
            Shape::Tree(node) | Shape::Children(node) => {
                for (i, item) in self.list(value, path).iter().enumerate() {
                    self.object(node, item, &format!("{path}[{i}]"));
                }
            }
        }
    }

    fn scalar(&mut self, scalar: Scalar, value: &Value, path: &str) {
        let found = json_type(value);
        let text = value.as_str();
        let problem = match scalar {
            Scalar::Text => (!value.is_null() && text.is_none())
                .then(|| format!("expected a string or null, found {found}")),
            Scalar::Key => (text.is_none_or(str::is_empty))
                .then(|| format!("expected a non-empty string, found {value}")),
            Scalar::ObsId => (!text.is_some_and(d1::is_obs_id))
                .then(|| format!("expected an obs_id (O01, O01.02 or OIND), found {value}")),
            Scalar::PatientId => (!text.is_some_and(|id| is_prefixed_number(id, 'p')))
                .then(|| format!("expected a patient id like p10000032, found {value}")),
            Scalar::StudyId => (!text.is_some_and(|id| is_prefixed_number(id, 's')))
                .then(|| format!("expected a study id like s50414267, found {value}")),
            Scalar::Int => (!value.is_i64() && !value.is_u64())
                .then(|| format!("expected an integer, found {found} {value}")),
            Scalar::AnswerId => (!value.as_i64().is_some_and(|id| id >= 1))
                .then(|| format!("expected an answer id of at least 1, found {found} {value}")),
            Scalar::Bool => (!value.is_null() && !value.is_boolean())
                .then(|| format!("expected a boolean or null, found {found}")),
            Scalar::OneOf(allowed) | Scalar::Respelled(&layout::Respelling { allowed, .. }) => {
                match value {
                    Value::Null => None,
                    Value::String(s) if allowed.contains(&s.as_str()) => None,
                    other => Some(format!("{other} is not one of {}", allowed.join(", "))),
                }
            }
            Scalar::Level(aspect) => match value {
                Value::Null => None,
                Value::Number(n) if n.as_i64().and_then(|v| aspect.level_of_value(v)).is_some() => {
                    None
                }
                other => Some(format!(
                    "{other} is not a {} value, one of {}",
                    aspect.key,
                    level_values(aspect)
                )),
            },
            Scalar::Rating => match value {
                Value::Null => None,
                Value::String(code) if is_release_code(code) => None,
                other => Some(format!(
                    "{other} is not a rating code, one of {}",
                    Rating::ALL.map(Rating::release_code).join(", ")
                )),
            },
            Scalar::Enum(allowed) => match value {
                Value::String(s) if allowed.contains(&s.as_str()) => None,
                other => Some(format!("{other} is not one of {}", allowed.join(", "))),
            },
        };
        if let Some(problem) = problem {
            self.report(path, problem);
        }
    }

    /// Ids that must name existing nodes, and `child_level` against the depth of the obs_id.
    fn references(&mut self, root: &Map<String, Value>) {
        let keys_of = |name: &str| -> HashSet<String> {
            root.get(name)
                .and_then(Value::as_object)
                .map(|map| map.keys().cloned().collect())
                .unwrap_or_default()
        };
        let mut observations = keys_of("observations");
        let regions = keys_of("regions");
        let sentences: HashSet<String> = root
            .get("sentences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("sent_id")?.as_str().map(str::to_string))
            .collect();

        if let Some(map) = root.get("observations").and_then(Value::as_object) {
            for (obs_id, observation) in map {
                if obs_id == d1::INDICATION_OBS_ID {
                    self.report(
                        &join("observations", obs_id),
                        "OIND belongs in indication.answer_for_indication",
                    );
                }
                self.child_level(observation, &join("observations", obs_id));
            }
        }
        let answer = root
            .get("indication")
            .and_then(|i| i.get("answer_for_indication"))
            .filter(|a| !a.is_null());
        if let Some(answer) = answer {
            let path = "indication.answer_for_indication";
            if answer.get("obs_id").and_then(Value::as_str) != Some(d1::INDICATION_OBS_ID) {
                self.report(path, "the indication's answer must have obs_id OIND");
            }
            self.child_level(answer, path);
            observations.insert(d1::INDICATION_OBS_ID.to_string());
        }

        let mut check = |path: String, id: &Value, known: &HashSet<String>, what: &str| {
            if let Some(id) = id.as_str().filter(|id| !known.contains(*id)) {
                self.report(&path, format!("`{id}` is not {what} of this scene graph"));
            }
        };
        let items = |name: &str| {
            root.get(name)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        for (i, id) in items("top_level_obs_ids").enumerate() {
            check(
                format!("top_level_obs_ids[{i}]"),
                id,
                &observations,
                "an observation",
            );
        }
        for (i, relation) in items("obs_relations").enumerate() {
            for key in ["parent_obs_id", "child_obs_id"] {
                if let Some(id) = relation.get(key) {
                    let path = format!("obs_relations[{i}].{key}");
                    check(path, id, &observations, "an observation");
                }
            }
        }
        for (i, relation) in items("obs_sent_relations").enumerate() {
            if let Some(id) = relation.get("obs_id") {
                let path = format!("obs_sent_relations[{i}].obs_id");
                check(path, id, &observations, "an observation");
            }
            if let Some(id) = relation.get("sent_id") {
                let path = format!("obs_sent_relations[{i}].sent_id");
                check(path, id, &sentences, "a sentence");
            }
        }
        for (i, relation) in items("located_at_relations").enumerate() {
            if let Some(id) = relation.get("obs_id") {
                let path = format!("located_at_relations[{i}].obs_id");
                check(path, id, &observations, "an observation");
            }
            if let Some(id) = relation.get("region") {
                let path = format!("located_at_relations[{i}].region");
                check(path, id, &regions, "a region");
            }
        }
        if let Some(indication) = root.get("indication").and_then(Value::as_object) {
            let ids = |key: &str| {
                indication
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            };
            for (i, id) in ids("associated_obs_ids").enumerate() {
                let path = format!("indication.associated_obs_ids[{i}]");
                check(path, id, &observations, "an observation");
            }
            for (i, id) in ids("associated_sentence_ids").enumerate() {
                let path = format!("indication.associated_sentence_ids[{i}]");
                check(path, id, &sentences, "a sentence");
            }
        }
    }

    /// D.2's rules for one question (see [`validate_qa`]).
    fn question(&mut self, question: &Value, path: &str) {
        let text = |key: &str| question.get(key).and_then(Value::as_str);
        if let (Some(id), Some(question_type)) = (text("question_id"), text("question_type"))
            && !d2::is_question_id(id, question_type)
        {
            self.report(
                &join(path, "question_id"),
                format!("{id} is not <question_type>_<NNN> for question_type {question_type}"),
            );
        }
        let images: HashSet<&str> = question
            .get("question_img_localization_quality")
            .and_then(Value::as_object)
            .map(|map| map.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut parts = Parts {
            images,
            ..Parts::default()
        };
        if let Some(answers) = question.get("answers").and_then(Value::as_array) {
            self.parts(answers, 0, &join(path, "answers"), &mut parts);
        }
        if !parts.main_answer {
            self.report(
                &join(path, "answers"),
                format!("no answer part is a {}", d2::MAIN_ANSWER),
            );
        }
        for (key, derived) in [
            ("contains_report_answers", parts.from_report),
            ("contains_template_answers", parts.from_template),
        ] {
            if let Some(flag) = question.get(key).and_then(Value::as_bool)
                && flag != derived
            {
                self.report(
                    &join(path, key),
                    format!("{flag}, but the answer parts say {derived}"),
                );
            }
        }
    }

    /// The answer parts of one level of a question, recursively.
    fn parts(&mut self, answers: &[Value], level: i64, path: &str, seen: &mut Parts<'_>) {
        for (i, part) in answers.iter().enumerate() {
            let path = format!("{path}[{i}]");
            if let Some(id) = part.get("answer_id").and_then(Value::as_i64)
                && !seen.ids.insert(id)
            {
                self.report(
                    &join(&path, "answer_id"),
                    format!("{id} is not unique in the question"),
                );
            }
            if let Some(found) = part.get("answer_level").and_then(Value::as_i64)
                && found != level
            {
                let expected = if level == 0 {
                    "0 for a top-level part".to_string()
                } else {
                    format!("{level}, its parent's level + 1")
                };
                self.report(
                    &join(&path, "answer_level"),
                    format!("{found}, expected {expected}"),
                );
            }
            if part.get("answer_type").and_then(Value::as_str) == Some(d2::MAIN_ANSWER) {
                seen.main_answer = true;
            }
            match part.get("from_report").and_then(Value::as_bool) {
                Some(true) => seen.from_report = true,
                Some(false) => seen.from_template = true,
                None => {}
            }
            if let Some(map) = part.get("localization").and_then(Value::as_object) {
                for image_id in map.keys() {
                    if !seen.images.contains(image_id.as_str()) {
                        self.report(
                            &join(&join(&path, "localization"), image_id),
                            "image is not in the question's question_img_localization_quality",
                        );
                    }
                }
            }
            if let Some(children) = part.get("sub_answers").and_then(Value::as_array) {
                self.parts(children, level + 1, &join(&path, "sub_answers"), seen);
            }
        }
    }

    /// `child_level` is the number of `.`-separated levels below the top (`O01.02` → 1).
    fn child_level(&mut self, observation: &Value, path: &str) {
        let obs_id = observation.get("obs_id").and_then(Value::as_str);
        let level = observation.get("child_level").and_then(Value::as_u64);
        if let (Some(obs_id), Some(level)) = (obs_id, level) {
            let depth = obs_id.matches('.').count() as u64;
            if d1::is_obs_id(obs_id) && depth != level {
                self.report(
                    &join(path, "child_level"),
                    format!("{level} does not match the depth of obs_id {obs_id} ({depth})"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn quality() -> Value {
        json!({
            "region_extract_quality": 4,
            "entity_extract_quality": 2,
            "sentence_name_quality": 2,
            "change_quality": 3,
            "general_issue_level": 4
        })
    }

    fn observation(obs_id: &str, child_level: u32) -> Value {
        json!({
            "obs_id": obs_id, "summary_sentence": "Small left pleural effusion.",
            "name": "left pleural effusion", "child_level": child_level, "child_type": null,
            "regions": [{"region": "left_lung", "distances": []}], "non_resolved_regions": [],
            "laterality": "left", "default_regions": [], "obs_entities": ["pleural effusion"],
            "obs_entities_parents": [], "non_resolved_obs_entities": [],
            "obs_categories": ["ANATOMICAL_FINDING"], "obs_subcategories": ["PLEURA"],
            "probability": "positive", "certainty": "certain", "positiveness": "pos",
            "modifiers": {"severity": ["small"], "texture": [], "spread": [], "temporal": []},
            "change_sentence": null, "changes": [], "from_report": true,
            "obs_quality": quality(),
            "localization": {"img1": {
                "image_id": "img1", "bboxes": [[1.0, 2.0, 3.5, 4.0]],
                "localization_reference_ids": ["left_lung"], "missing_localization": [],
                "is_fallback": false, "localization_quality": 3
            }}
        })
    }

    fn graph() -> Value {
        json!({
            "patient_id": "p10000032", "study_id": "s50414267",
            "study_quality": quality(),
            "study_img_localization_quality": {"img1": 3},
            "sentences": [{"sent_id": "S01", "section": "FINDINGS", "section_type": "FINDINGS",
                           "sentence": "Small left pleural effusion."}],
            "observations": {"O01": observation("O01", 0)},
            "top_level_obs_ids": ["O01"],
            "regions": {"left_lung": {"region": "left_lung", "laterality": "left",
                                      "localization": {}, "region_localization_quality": null}},
            "indication": null,
            "located_at_relations": [{"obs_id": "O01", "region": "left_lung", "distances": [],
                                      "where_specified": "direct"}],
            "obs_relations": [],
            "obs_sent_relations": [{"obs_id": "O01", "sent_id": "S01"}],
            "region_region_relations": [],
            "extractor": "rules", "embedder": "lexical"
        })
    }

    #[test]
    fn a_conforming_graph_has_no_deviations() {
        assert_eq!(validate_scene_graph(&graph()), Vec::<String>::new());
    }

    fn deviations_after(edit: impl FnOnce(&mut Value)) -> Vec<String> {
        let mut value = graph();
        edit(&mut value);
        validate_scene_graph(&value)
    }

    #[test]
    fn missing_unknown_and_mistyped_fields_are_caught() {
        let missing = deviations_after(|g| {
            g["observations"]["O01"]
                .as_object_mut()
                .map(|o| o.remove("changes"));
        });
        assert_eq!(missing, ["observations.O01: missing key `changes`"]);

        let unknown = deviations_after(|g| g["regions"]["left_lung"]["color"] = json!("red"));
        assert_eq!(unknown, ["regions.left_lung: unknown key `color`"]);

        let extra_root = deviations_after(|g| g["observations"]["O01"]["extractor"] = json!("x"));
        assert_eq!(extra_root, ["observations.O01: unknown key `extractor`"]);

        let wrong_type = deviations_after(|g| g["observations"]["O01"]["child_level"] = json!("0"));
        assert_eq!(
            wrong_type,
            ["observations.O01.child_level: expected an integer, found string \"0\""]
        );

        let not_a_dict = deviations_after(|g| g["observations"] = json!([observation("O01", 0)]));
        assert!(not_a_dict[0].starts_with("observations: expected a dict, found list"));
    }

    #[test]
    fn keys_boxes_ids_and_enumerations_are_checked() {
        let key = deviations_after(|g| {
            let o = g["observations"]["O01"].take();
            g["observations"] = json!({"O02": o});
        });
        assert!(
            key.contains(
                &"observations.O02: dict key `O02` differs from its obs_id \"O01\"".into()
            )
        );

        let bbox = deviations_after(|g| {
            g["observations"]["O01"]["localization"]["img1"]["bboxes"] = json!([[1, 2, 3]]);
        });
        assert_eq!(bbox.len(), 1);
        assert!(
            bbox[0].starts_with("observations.O01.localization.img1.bboxes[0]: expected a box")
        );

        let obs_id = deviations_after(|g| g["top_level_obs_ids"] = json!(["O1"]));
        assert!(obs_id[0].starts_with("top_level_obs_ids[0]: expected an obs_id"));

        let laterality = deviations_after(|g| {
            g["regions"]["left_lung"]["laterality"] = json!("likely bilateral")
        });
        assert_eq!(laterality.len(), 1, "{laterality:?}");

        let section = deviations_after(|g| g["sentences"][0]["section_type"] = json!("FINDING"));
        assert_eq!(section.len(), 1, "{section:?}");

        // Quality levels are integers of their aspect, not names.
        let name = deviations_after(|g| g["study_quality"]["change_quality"] = json!("NO_ISSUES"));
        assert_eq!(
            name,
            [
                "study_quality.change_quality: \"NO_ISSUES\" is not a change_quality value, one of 0, 1, 2, 3, 9"
            ]
        );
        let out_of_range =
            deviations_after(|g| g["study_img_localization_quality"]["img1"] = json!(5));
        assert_eq!(out_of_range.len(), 1, "{out_of_range:?}");
        let issue = deviations_after(|g| g["study_quality"]["general_issue_level"] = json!(-1));
        assert_eq!(issue, Vec::<String>::new(), "DISCARDED is -1");

        let level = deviations_after(|g| g["observations"]["O01"]["child_level"] = json!(1));
        assert_eq!(
            level,
            ["observations.O01.child_level: 1 does not match the depth of obs_id O01 (0)"]
        );

        let dangling = deviations_after(|g| g["obs_sent_relations"][0]["sent_id"] = json!("S09"));
        assert_eq!(
            dangling,
            ["obs_sent_relations[0].sent_id: `S09` is not a sentence of this scene graph"]
        );
    }

    #[test]
    fn provenance_keys_are_optional_at_the_root_only() {
        let release_file = deviations_after(|g| {
            let root = g.as_object_mut().expect("dict");
            root.remove("extractor");
            root.remove("embedder");
        });
        assert_eq!(release_file, Vec::<String>::new());
    }

    #[test]
    fn ids_are_checked_at_the_root() {
        let deviations = deviations_after(|g| g["study_id"] = json!("50414267"));
        assert_eq!(deviations.len(), 1);
        assert!(deviations[0].starts_with("study_id: expected a study id"));
        assert!(validate_scene_graph(&json!([])).len() == 1);
    }
}
