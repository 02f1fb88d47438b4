//! The template engine (paper 000, E.2.1) over one scene graph: for each template and each
//! variable binding (subcategory, region, finding), filter the observations, run the strategy
//! (named subsets and state), fill the main template answer and turn the subsets into answer
//! parts (children follow `obs_relations`). `templates/README.md` describes the semantics.

use std::collections::{BTreeSet, HashMap, HashSet};

use cxrlake_templates::{
    AnswerType, FindingKind, Part, RegionSet, Strategy, Subset, Template, Templates, Test, When,
};

use super::balance::{Balance, unit_hash};
use super::scene::{Localization, Obs, ObsKind, Scene};
use crate::graph::worst_quality;
use crate::map::{ObsQuality, Reference};

/// `{name, value_json}` of `qa.variables`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Variable name.
    pub name: &'static str,
    /// Its value as JSON.
    pub value_json: String,
}

/// `[type, value]` of an answer part's modifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct ModifierPair {
    /// severity, texture, spread, temporal.
    pub modifier_type: &'static str,
    /// The value.
    pub value: String,
}

/// `{image_id, localization_quality}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageQualityOut {
    /// Image.
    pub image_id: String,
    /// Worst level.
    pub localization_quality: String,
}

/// One answer part (D.2), flat: `parent_answer_id` and `answer_level` give the hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerPart {
    /// Counter within the question, from 0.
    pub answer_id: i64,
    /// The part this one is a sub-answer of.
    pub parent_answer_id: Option<i64>,
    /// 0 for top level.
    pub answer_level: i32,
    /// main_answer, details, related_information.
    pub answer_type: &'static str,
    /// Text.
    pub text: String,
    /// Short text.
    pub name_tag: Option<String>,
    /// Laterality.
    pub laterality: Option<String>,
    /// Region names.
    pub regions: Vec<String>,
    /// Findings.
    pub obs_entities: Vec<String>,
    /// Their parents.
    pub obs_entities_parents: Vec<String>,
    /// Categories.
    pub obs_categories: Vec<String>,
    /// Subcategories.
    pub obs_subcategories: Vec<String>,
    /// Certainty.
    pub certainty: Option<String>,
    /// Positiveness.
    pub positiveness: Option<String>,
    /// `[type, value]` pairs.
    pub modifiers: Vec<ModifierPair>,
    /// Per image.
    pub localization: Vec<Localization>,
    /// From an observation node.
    pub from_report: bool,
    /// Observations it is derived from.
    pub obs_ids: Vec<String>,
    /// Worst extraction quality of those.
    pub extraction_quality: Option<ObsQuality>,
}

/// One `qa` row without the study keys and the judged columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `<template>_<NNN>`.
    pub question_id: String,
    /// The template id.
    pub question_type: String,
    /// The strategy.
    pub question_strategy: &'static str,
    /// Variable bindings.
    pub variables: Vec<Variable>,
    /// Observations the answer is derived from.
    pub obs_ids: Vec<String>,
    /// Any part from the report.
    pub contains_report_answers: bool,
    /// Any part from a template.
    pub contains_template_answers: bool,
    /// Worst over the observations.
    pub extraction_quality: Option<ObsQuality>,
    /// Worst localization per image over the parts.
    pub question_img_localization_quality: Vec<ImageQualityOut>,
    /// Question text.
    pub question: String,
    /// Answer parts, parents before children.
    pub answers: Vec<AnswerPart>,
}

/// Everything generation reads besides the scene graph.
#[derive(Debug)]
pub struct Engine {
    /// Templates and strategy settings.
    pub templates: Templates,
    /// Reference lookups.
    pub reference: Reference,
    /// Sampling probabilities and correlations.
    pub balance: Balance,
    /// Findings indicative of each finding.
    indicated_by: HashMap<String, Vec<String>>,
}

/// What a question is about.
#[derive(Debug, Clone, Default)]
struct Binding<'a> {
    subcategory: Option<(&'a str, &'a str)>,
    region: Option<&'a str>,
    finding: Option<&'a str>,
}

/// A strategy's result for one binding.
#[derive(Debug, Default)]
struct Subsets {
    sets: [Vec<usize>; Subset::COUNT],
    oind: bool,
}

impl Subsets {
    fn get(&self, s: Subset) -> &[usize] {
        &self.sets[s.index()]
    }
}

const LOCALIZATION_LEVELS: [&str; 5] = [
    "NO_LOCALIZATION",
    "FALLBACK_LOCALIZATION",
    "INCOMPLETE_LOCALIZATION",
    "BOX_LOCALIZATION",
    "BOX_AND_MASK_LOCALIZATION",
];

fn localization_rank(level: &str) -> usize {
    LOCALIZATION_LEVELS
        .iter()
        .position(|l| *l == level)
        .unwrap_or(0)
}

impl Engine {
    /// An engine over these inputs.
    pub fn new(templates: Templates, reference: Reference, balance: Balance) -> Engine {
        let mut indicated_by: HashMap<String, Vec<String>> = HashMap::new();
        for (name, info) in reference.findings() {
            for target in &info.indicative_of {
                indicated_by
                    .entry(target.clone())
                    .or_default()
                    .push(name.clone());
            }
        }
        for list in indicated_by.values_mut() {
            list.sort();
        }
        Engine {
            templates,
            reference,
            balance,
            indicated_by,
        }
    }

    /// Positive, unless all its findings state normality (`normal_findings`).
    fn is_pos(&self, o: &Obs) -> bool {
        o.is_pos() && !self.is_normal(o)
    }

    /// Negative, or a positive statement of normality.
    fn is_neg(&self, o: &Obs) -> bool {
        o.is_neg() || (o.is_pos() && self.is_normal(o))
    }

    fn is_normal(&self, o: &Obs) -> bool {
        let normal = &self.templates.strategies.normal_findings;
        !o.obs_entities.is_empty() && o.obs_entities.iter().all(|e| normal.contains(e))
    }

    /// Every question of one study, template by template.
    pub fn generate(&self, scene: &Scene) -> Vec<Question> {
        let mut out = Vec::new();
        let regions = self.region_set(scene, RegionSet::All);
        let device_regions = self.region_set(scene, RegionSet::Device);
        let (findings, devices) = self.finding_sets(scene);
        for template in &self.templates.templates {
            let mut counter = 0;
            let subcats: Vec<Option<(&str, &str)>> = if template.variables.subcategory.is_empty() {
                vec![None]
            } else {
                template
                    .variables
                    .subcategory
                    .iter()
                    .map(|v| Some((v.value.as_str(), v.text.as_str())))
                    .collect()
            };
            let mut bindings: Vec<Binding<'_>> = Vec::new();
            for subcategory in subcats {
                match template.strategy {
                    Strategy::Indication | Strategy::Abnormal => bindings.push(Binding {
                        subcategory,
                        ..Binding::default()
                    }),
                    Strategy::RegionAbnormal => {
                        let set = match template.region_set {
                            RegionSet::All => &regions,
                            RegionSet::Device => &device_regions,
                        };
                        bindings.extend(set.iter().map(|r| Binding {
                            subcategory,
                            region: Some(r.as_str()),
                            finding: None,
                        }));
                    }
                    Strategy::Finding => {
                        let set = match template.finding_kind {
                            FindingKind::Finding => &findings,
                            FindingKind::Device => &devices,
                        };
                        bindings.extend(set.iter().map(|f| Binding {
                            subcategory,
                            region: None,
                            finding: Some(f.as_str()),
                        }));
                    }
                }
            }
            for binding in bindings {
                let id = format!("{}_{:03}", template.id, counter + 1);
                if let Some(question) = self.question(scene, template, &binding, id) {
                    counter += 1;
                    out.push(question);
                }
            }
        }
        out
    }

    /// The regions asked about: graph region nodes, defaults and sampled ones (or the device
    /// regions and the regions devices are located at).
    fn region_set(&self, scene: &Scene, set: RegionSet) -> BTreeSet<String> {
        let settings = &self.templates.strategies.region_abnormal;
        let mut out = BTreeSet::new();
        match set {
            RegionSet::All => {
                out.extend(scene.graph.regions.iter().map(|r| r.region.clone()));
                out.extend(settings.default_regions.iter().cloned());
                let seed = self.templates.strategies.seed;
                for (region, p) in &self.balance.regions {
                    if !out.contains(region) && unit_hash(seed, &scene.graph.study_id, region) < *p
                    {
                        out.insert(region.clone());
                    }
                }
            }
            RegionSet::Device => {
                out.extend(settings.device_regions.iter().cloned());
                for o in scene.obs() {
                    if o.kind() == ObsKind::Device {
                        out.extend(o.regions.iter().map(|r| r.region.clone()));
                    }
                }
            }
        }
        out.retain(|r| self.reference.region(r).is_some());
        out
    }

    /// The findings and the devices asked about.
    fn finding_sets(&self, scene: &Scene) -> (BTreeSet<String>, BTreeSet<String>) {
        let settings = &self.templates.strategies.finding;
        let mut all = BTreeSet::new();
        for o in scene.obs() {
            all.extend(o.obs_entities.iter().cloned());
            all.extend(o.obs_entities_parents.iter().cloned());
        }
        all.extend(settings.default_findings.iter().cloned());
        all.extend(settings.default_devices.iter().cloned());
        let seed = self.templates.strategies.seed;
        for (finding, p) in &self.balance.findings {
            if !all.contains(finding) && unit_hash(seed, &scene.graph.study_id, finding) < *p {
                all.insert(finding.clone());
            }
        }
        let mut findings = BTreeSet::new();
        let mut devices = BTreeSet::new();
        let normal = &self.templates.strategies.normal_findings;
        for name in all.into_iter().filter(|f| !normal.contains(f)) {
            match self.reference.finding(&name).map(|f| f.category.as_str()) {
                Some("DEVICE") => {
                    devices.insert(name);
                }
                Some("TECHNICAL") | None => {}
                Some(_) => {
                    findings.insert(name);
                }
            }
        }
        (findings, devices)
    }

    /// Whether observation `o` passes the template's filter.
    fn passes(template: &Template, binding: &Binding<'_>, o: &Obs) -> bool {
        let filter = &template.filter;
        if !filter.categories.is_empty()
            && !o
                .obs_categories
                .iter()
                .any(|c| filter.categories.contains(c))
        {
            return false;
        }
        if filter.subcategories.is_empty() {
            return true;
        }
        filter.subcategories.iter().any(|wanted| {
            if wanted == "{subcategory}" {
                let value = binding.subcategory.map(|(v, _)| v).unwrap_or_default();
                value
                    .split(',')
                    .map(str::trim)
                    .any(|v| o.obs_subcategories.iter().any(|s| s == v))
            } else {
                o.obs_subcategories.iter().any(|s| s == wanted)
            }
        })
    }

    /// Runs the strategy for one binding.
    fn strategy(&self, scene: &Scene, template: &Template, binding: &Binding<'_>) -> Subsets {
        let mut subsets = Subsets::default();
        let obs = scene.obs();
        let classify = |i: usize, subsets: &mut Subsets| {
            let o = &obs[i];
            let target = match (o.kind(), self.is_pos(o), self.is_neg(o)) {
                (ObsKind::Finding, true, _) => Subset::FindingPos,
                (ObsKind::Finding, _, true) => Subset::FindingNeg,
                (ObsKind::Device, true, _) => Subset::DevicePos,
                (ObsKind::Device, _, true) => Subset::DeviceNeg,
                (ObsKind::Acquisition, _, false) => Subset::Acquisition,
                _ => return,
            };
            subsets.sets[target.index()].push(i);
        };
        let passes = |i: &usize| Self::passes(template, binding, &obs[*i]);
        match template.strategy {
            Strategy::Indication => {
                if let Some(indication) = &scene.graph.indication {
                    subsets.oind = indication.answer_for_indication.is_some();
                    subsets.sets[Subset::Associated.index()] = obs
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| indication.associated_obs_ids.contains(&o.obs_id))
                        .map(|(i, _)| i)
                        .collect();
                }
            }
            Strategy::Abnormal => {
                for i in (0..obs.len()).filter(passes) {
                    classify(i, &mut subsets);
                }
            }
            Strategy::RegionAbnormal => {
                let region = binding.region.unwrap_or_default();
                let here: Vec<usize> = scene
                    .at_region
                    .get(region)
                    .map(|l| l.iter().copied().filter(passes).collect())
                    .unwrap_or_default();
                for &i in &here {
                    classify(i, &mut subsets);
                }
                if let Some(info) = self.reference.region(region) {
                    let mut related = BTreeSet::new();
                    let other_side = match info.laterality {
                        cxrlake_refdefs::Laterality::Left => info.right.as_deref(),
                        cxrlake_refdefs::Laterality::Right => info.left.as_deref(),
                        _ => None,
                    };
                    for r in info.ancestors.iter().map(String::as_str).chain(other_side) {
                        for &i in scene.at_region.get(r).into_iter().flatten() {
                            let o = &obs[i];
                            if !here.contains(&i)
                                && self.is_pos(o)
                                && o.kind() == ObsKind::Finding
                                && passes(&i)
                            {
                                related.insert(i);
                            }
                        }
                    }
                    subsets.sets[Subset::RelatedRegions.index()] = related.into_iter().collect();
                }
            }
            Strategy::Finding => {
                let finding = binding.finding.unwrap_or_default();
                let mut main = HashSet::new();
                for (i, o) in obs.iter().enumerate() {
                    if o.mentions(finding) && passes(&i) {
                        classify(i, &mut subsets);
                        main.insert(i);
                    }
                }
                let info = self.reference.finding(finding);
                let parents: &[String] = info.map(|f| f.parents.as_slice()).unwrap_or_default();
                let subcats: &[String] =
                    info.map(|f| f.subcategories.as_slice()).unwrap_or_default();
                let indicates: &[String] =
                    info.map(|f| f.indicative_of.as_slice()).unwrap_or_default();
                let indicated_by: &[String] = self
                    .indicated_by
                    .get(finding)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let correlated: &[String] = self
                    .balance
                    .correlated
                    .get(finding)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let has =
                    |o: &Obs, names: &[String]| o.obs_entities.iter().any(|e| names.contains(e));
                let mut used = main.clone();
                let related: [(Subset, &dyn Fn(&Obs) -> bool); 5] = [
                    (Subset::ParentFindings, &|o| has(o, parents)),
                    (Subset::Indications, &|o| has(o, indicates)),
                    (Subset::IndicativeOf, &|o| has(o, indicated_by)),
                    (Subset::Correlated, &|o| has(o, correlated)),
                    (Subset::SameSubcat, &|o| {
                        o.obs_subcategories.iter().any(|s| subcats.contains(s))
                    }),
                ];
                for (subset, test) in related {
                    for (i, o) in obs.iter().enumerate() {
                        if self.is_pos(o) && !used.contains(&i) && test(o) {
                            subsets.sets[subset.index()].push(i);
                            used.insert(i);
                        }
                    }
                }
            }
        }
        subsets
    }

    fn holds(when: &When, subsets: &Subsets, obs: &[Obs]) -> bool {
        let positives = || {
            subsets
                .get(Subset::FindingPos)
                .iter()
                .chain(subsets.get(Subset::DevicePos))
                .map(|&i| &obs[i])
        };
        when.0.iter().all(|c| {
            let value = match c.test {
                Test::NonEmpty(Subset::Indication) => subsets.oind,
                Test::NonEmpty(s) => !subsets.get(s).is_empty(),
                Test::Uncertain => {
                    positives().next().is_some()
                        && positives().all(|o| o.certainty.as_deref() != Some("certain"))
                }
                Test::Severity => positives().any(|o| !o.modifiers.severity.is_empty()),
                Test::Located => positives().any(|o| !o.regions.is_empty()),
                Test::Mentioned => [
                    Subset::FindingPos,
                    Subset::FindingNeg,
                    Subset::DevicePos,
                    Subset::DeviceNeg,
                    Subset::Acquisition,
                ]
                .iter()
                .any(|s| !subsets.get(*s).is_empty()),
            };
            value != c.negated
        })
    }

    /// One question, or `None` when its answer would have no main answer part.
    fn question(
        &self,
        scene: &Scene,
        template: &Template,
        binding: &Binding<'_>,
        question_id: String,
    ) -> Option<Question> {
        let subsets = self.strategy(scene, template, binding);
        if template.strategy == Strategy::Indication && !subsets.oind {
            return None;
        }
        let obs = scene.obs();
        let fill = |text: &str| self.fill(text, scene, binding, &subsets);
        let mut builder = AnswerBuilder::new(scene);
        if let Some(case) = template
            .main
            .iter()
            .find(|case| Self::holds(&case.when, &subsets, obs))
        {
            let tagged: Vec<usize> = case
                .tags_from
                .iter()
                .flat_map(|s| subsets.get(s.0).iter().copied())
                .collect();
            let part = self.template_part(
                scene,
                binding,
                fill(&case.text),
                AnswerType::MainAnswer,
                &tagged,
            );
            builder.push_template(part, None);
        }
        for part in &template.parts {
            if !Self::holds(&part.when, &subsets, obs) {
                continue;
            }
            self.push_subset(&mut builder, scene, binding, part, &subsets, &fill);
        }
        let answers = builder.parts;
        if !answers.iter().any(|a| a.answer_type == "main_answer") {
            return None;
        }
        let question_text = self.pick(template, scene, &question_id);
        let mut variables = Vec::new();
        if let Some((value, _)) = binding.subcategory {
            variables.push(Variable {
                name: "subcategory",
                value_json: json_string(value),
            });
        }
        if let Some(region) = binding.region {
            variables.push(Variable {
                name: "region",
                value_json: json_string(region),
            });
        }
        if let Some(finding) = binding.finding {
            variables.push(Variable {
                name: "finding",
                value_json: json_string(finding),
            });
        }
        let mut obs_ids: Vec<String> = Vec::new();
        for a in &answers {
            for id in &a.obs_ids {
                if !obs_ids.contains(id) {
                    obs_ids.push(id.clone());
                }
            }
        }
        let qualities: Vec<&ObsQuality> = builder
            .used
            .iter()
            .filter_map(|&i| obs[i].obs_quality.as_ref())
            .collect();
        Some(Question {
            question_id,
            question_type: template.id.clone(),
            question_strategy: template.strategy.as_str(),
            variables,
            obs_ids,
            contains_report_answers: answers.iter().any(|a| a.from_report),
            contains_template_answers: answers.iter().any(|a| !a.from_report),
            extraction_quality: worst_quality(qualities),
            question_img_localization_quality: image_quality(&answers),
            question: fill(&question_text),
            answers,
        })
    }

    /// The phrasing of `template` for this question (by hash, reproducible).
    fn pick(&self, template: &Template, scene: &Scene, question_id: &str) -> String {
        let n = template.questions.len().max(1);
        let u = unit_hash(
            self.templates.strategies.seed,
            &scene.graph.study_id,
            question_id,
        );
        let index = ((u * n as f64) as usize).min(n - 1);
        template.questions.get(index).cloned().unwrap_or_default()
    }

    /// `text` with its placeholders filled.
    fn fill(&self, text: &str, scene: &Scene, binding: &Binding<'_>, subsets: &Subsets) -> String {
        if !text.contains('{') {
            return text.to_string();
        }
        let obs = scene.obs();
        let positives: Vec<&Obs> = subsets
            .get(Subset::FindingPos)
            .iter()
            .chain(subsets.get(Subset::DevicePos))
            .map(|&i| &obs[i])
            .collect();
        let mut out = text.to_string();
        if let Some(region) = binding.region {
            out = out.replace("{region}", region);
        }
        if let Some(finding) = binding.finding {
            out = out.replace("{finding}", finding);
        }
        if let Some((_, phrase)) = binding.subcategory {
            out = out.replace("{subcategory}", phrase);
        }
        if out.contains("{indication}") {
            let indication = scene.graph.indication.as_ref();
            let summary = indication
                .and_then(|i| {
                    i.indication_summary
                        .clone()
                        .or_else(|| i.indication.clone())
                })
                .unwrap_or_default();
            out = out.replace("{indication}", &summary);
        }
        if out.contains("{locations}") {
            let mut regions: Vec<&str> = Vec::new();
            for o in &positives {
                for r in &o.regions {
                    if !regions.contains(&r.region.as_str()) {
                        regions.push(&r.region);
                    }
                }
            }
            let phrases: Vec<String> = regions.iter().map(|r| format!("the {r}")).collect();
            out = out.replace("{locations}", &join_and(&phrases));
        }
        if out.contains("{severity}") {
            let mut values: Vec<String> = Vec::new();
            for o in &positives {
                for v in &o.modifiers.severity {
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                }
            }
            out = out.replace("{severity}", &join_and(&values));
        }
        out
    }

    /// A template answer part carrying the tags and boxes of `tagged` observations (and of
    /// the question's region or finding).
    fn template_part(
        &self,
        scene: &Scene,
        binding: &Binding<'_>,
        text: String,
        answer_type: AnswerType,
        tagged: &[usize],
    ) -> (AnswerPart, Vec<usize>) {
        let obs = scene.obs();
        let mut part = AnswerPart {
            answer_id: 0,
            parent_answer_id: None,
            answer_level: 0,
            answer_type: answer_type.as_str(),
            text,
            name_tag: None,
            laterality: None,
            regions: Vec::new(),
            obs_entities: Vec::new(),
            obs_entities_parents: Vec::new(),
            obs_categories: Vec::new(),
            obs_subcategories: Vec::new(),
            certainty: None,
            positiveness: None,
            modifiers: Vec::new(),
            localization: Vec::new(),
            from_report: false,
            obs_ids: Vec::new(),
            extraction_quality: None,
        };
        if let Some(region) = binding.region {
            push_unique(&mut part.regions, region);
            if let Some(node) = scene.region_node(region) {
                part.laterality = node.laterality.clone();
                merge_localization(&mut part.localization, &node.localization);
            }
            part.name_tag = Some(region.to_string());
        }
        if let Some(finding) = binding.finding {
            push_unique(&mut part.obs_entities, finding);
            if let Some(info) = self.reference.finding(finding) {
                push_unique(&mut part.obs_categories, &info.category);
                for s in &info.subcategories {
                    push_unique(&mut part.obs_subcategories, s);
                }
                for p in &info.parents {
                    push_unique(&mut part.obs_entities_parents, p);
                }
            }
            part.name_tag = Some(finding.to_string());
        }
        let mut lateralities: Vec<&str> = Vec::new();
        let mut any_pos = false;
        let mut certain = false;
        for &i in tagged {
            let o = &obs[i];
            for r in &o.regions {
                push_unique(&mut part.regions, &r.region);
            }
            for e in &o.obs_entities {
                push_unique(&mut part.obs_entities, e);
            }
            for e in &o.obs_entities_parents {
                push_unique(&mut part.obs_entities_parents, e);
            }
            for c in &o.obs_categories {
                push_unique(&mut part.obs_categories, c);
            }
            for c in &o.obs_subcategories {
                push_unique(&mut part.obs_subcategories, c);
            }
            if let Some(l) = o.laterality.as_deref()
                && !lateralities.contains(&l)
            {
                lateralities.push(l);
            }
            if self.is_pos(o) {
                any_pos = true;
                certain |= o.certainty.as_deref() == Some("certain");
            }
            merge_localization(&mut part.localization, &o.localization);
            push_unique(&mut part.obs_ids, &o.obs_id);
        }
        if part.laterality.is_none() {
            part.laterality = match lateralities.as_slice() {
                [] => None,
                [one] => Some(one.to_string()),
                _ => Some("unknown".to_string()),
            };
        }
        part.positiveness = Some(if any_pos { "pos" } else { "neg" }.to_string());
        part.certainty = Some(
            if !any_pos || certain {
                "certain"
            } else {
                "likely"
            }
            .to_string(),
        );
        part.extraction_quality =
            worst_quality(tagged.iter().filter_map(|&i| obs[i].obs_quality.as_ref()));
        (part, tagged.to_vec())
    }

    fn push_subset(
        &self,
        builder: &mut AnswerBuilder<'_>,
        scene: &Scene,
        binding: &Binding<'_>,
        part: &Part,
        subsets: &Subsets,
        fill: &dyn Fn(&str) -> String,
    ) {
        let subset = part.subset.0;
        if subset == Subset::Indication {
            if let Some(oind) = scene
                .graph
                .indication
                .as_ref()
                .and_then(|i| i.answer_for_indication.as_ref())
            {
                builder.push_obs_node(oind, part.answer_type, None);
            }
            return;
        }
        let members = subsets.get(subset);
        if members.is_empty() {
            if let Some(fallback) = &part.fallback {
                let template =
                    self.template_part(scene, binding, fill(fallback), part.answer_type, &[]);
                builder.push_template(template, None);
            }
            return;
        }
        let parent = part.prefix.as_ref().map(|prefix| {
            let template = self.template_part(scene, binding, fill(prefix), part.answer_type, &[]);
            builder.push_template(template, None)
        });
        for &i in members {
            builder.push_obs(i, part.answer_type, parent);
        }
    }
}

/// Collects a question's answer parts; an observation is placed once (with its children).
struct AnswerBuilder<'a> {
    scene: &'a Scene,
    parts: Vec<AnswerPart>,
    placed: HashSet<usize>,
    used: BTreeSet<usize>,
}

impl<'a> AnswerBuilder<'a> {
    fn new(scene: &'a Scene) -> Self {
        Self {
            scene,
            parts: Vec::new(),
            placed: HashSet::new(),
            used: BTreeSet::new(),
        }
    }

    fn next_id(&self) -> i64 {
        self.parts.len() as i64
    }

    fn level_of(&self, parent: Option<i64>) -> i32 {
        parent
            .and_then(|p| self.parts.get(p as usize))
            .map(|p| p.answer_level + 1)
            .unwrap_or(0)
    }

    fn push_template(
        &mut self,
        (mut part, tagged): (AnswerPart, Vec<usize>),
        parent: Option<i64>,
    ) -> i64 {
        let id = self.next_id();
        part.answer_id = id;
        part.parent_answer_id = parent;
        part.answer_level = self.level_of(parent);
        self.used.extend(tagged);
        self.parts.push(part);
        id
    }

    /// Places observation `i` and its children, unless it or an ancestor is placed already.
    fn push_obs(&mut self, i: usize, answer_type: AnswerType, parent: Option<i64>) {
        let mut at = Some(i);
        while let Some(x) = at {
            if self.placed.contains(&x) {
                return;
            }
            at = self.scene.parent[x];
        }
        let scene = self.scene;
        let id = self.push_obs_node(&scene.obs()[i], answer_type, parent);
        self.placed.insert(i);
        self.used.insert(i);
        for &child in &scene.children[i] {
            self.push_obs(child, answer_type, Some(id));
        }
    }

    fn push_obs_node(&mut self, o: &Obs, answer_type: AnswerType, parent: Option<i64>) -> i64 {
        let id = self.next_id();
        let mut modifiers = Vec::new();
        for (kind, values) in [
            ("severity", &o.modifiers.severity),
            ("texture", &o.modifiers.texture),
            ("spread", &o.modifiers.spread),
            ("temporal", &o.modifiers.temporal),
        ] {
            modifiers.extend(values.iter().map(|v| ModifierPair {
                modifier_type: kind,
                value: v.clone(),
            }));
        }
        let text = o
            .summary_sentence
            .clone()
            .or_else(|| o.name.clone())
            .unwrap_or_default();
        self.parts.push(AnswerPart {
            answer_id: id,
            parent_answer_id: parent,
            answer_level: self.level_of(parent),
            answer_type: answer_type.as_str(),
            text,
            name_tag: o.name.clone(),
            laterality: o.laterality.clone(),
            regions: o.regions.iter().map(|r| r.region.clone()).collect(),
            obs_entities: o.obs_entities.clone(),
            obs_entities_parents: o.obs_entities_parents.clone(),
            obs_categories: o.obs_categories.clone(),
            obs_subcategories: o.obs_subcategories.clone(),
            certainty: o.certainty.clone(),
            positiveness: o.positiveness.clone(),
            modifiers,
            localization: o.localization.clone(),
            from_report: o.from_report.unwrap_or(true),
            obs_ids: vec![o.obs_id.clone()],
            extraction_quality: o.obs_quality.clone(),
        });
        id
    }
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// Adds `more` to `into`, image by image (boxes and ids appended, quality the worse one).
fn merge_localization(into: &mut Vec<Localization>, more: &[Localization]) {
    for l in more {
        match into.iter_mut().find(|x| x.image_id == l.image_id) {
            None => into.push(l.clone()),
            Some(x) => {
                for b in &l.bboxes {
                    if !x.bboxes.contains(b) {
                        x.bboxes.push(*b);
                    }
                }
                for id in &l.localization_reference_ids {
                    push_unique(&mut x.localization_reference_ids, id);
                }
                for id in &l.missing_localization {
                    push_unique(&mut x.missing_localization, id);
                }
                x.is_fallback =
                    Some(x.is_fallback.unwrap_or(false) || l.is_fallback.unwrap_or(false));
                let worse = match (&x.localization_quality, &l.localization_quality) {
                    (Some(a), Some(b)) if localization_rank(b) < localization_rank(a) => {
                        Some(b.clone())
                    }
                    (None, b) => b.clone(),
                    (a, _) => a.clone(),
                };
                x.localization_quality = worse;
            }
        }
    }
}

/// Worst localization level per image over the parts.
fn image_quality(parts: &[AnswerPart]) -> Vec<ImageQualityOut> {
    let mut out: Vec<ImageQualityOut> = Vec::new();
    for l in parts.iter().flat_map(|p| &p.localization) {
        let Some(level) = l.localization_quality.as_deref() else {
            continue;
        };
        match out.iter_mut().find(|q| q.image_id == l.image_id) {
            Some(q) => {
                if localization_rank(level) < localization_rank(&q.localization_quality) {
                    q.localization_quality = level.to_string();
                }
            }
            None => out.push(ImageQualityOut {
                image_id: l.image_id.clone(),
                localization_quality: level.to_string(),
            }),
        }
    }
    out.sort_by(|a, b| a.image_id.cmp(&b.image_id));
    out
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn json_string(value: &str) -> String {
    serde_json::Value::String(value.to_string()).to_string()
}
