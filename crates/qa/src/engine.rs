//! The template engine (paper 000, E.2.1) over one scene graph: for each template and each
//! variable binding (subcategory, region, finding), filter the observations, run the strategy
//! (named subsets and state), fill the main template answer and turn the subsets into answer
//! parts (children follow `obs_relations`). `templates/README.md` describes the semantics.
//!
//! Questions borrow their texts from the scene graph and the templates wherever they can
//! (`Cow`, [`Texts`]): a study has ~230 questions with several answer parts each, and copying
//! every tag list and localization into each part cost more than choosing them.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use cxrlake_templates::{
    AnswerType, FindingKind, Part, RegionSet, Strategy, Subset, Template, Templates, Test, When,
};

use crate::balance::{Balance, unit_hash};
use crate::scene::{Localization, Obs, ObsKind, Scene};
use cxrlake_graph::{LOCALIZATION_LEVELS, worst_quality};
use cxrlake_map::{ObsQuality, Reference, RegionRef};

/// A predicate over observations, naming a related subset.
type ObsFilter<'a> = &'a dyn Fn(&Obs) -> bool;

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
pub struct ModifierPair<'a> {
    /// severity, texture, spread, temporal.
    pub modifier_type: &'static str,
    /// The value.
    pub value: &'a str,
}

/// A list of texts of an answer part: an observation's own list, or texts gathered from the
/// question's region or finding and its tagged observations.
#[derive(Debug, Clone, PartialEq)]
pub enum Texts<'a> {
    /// A list of the scene graph, as it is.
    Slice(&'a [String]),
    /// The names of an observation's regions.
    Regions(&'a [RegionRef]),
    /// Texts gathered one by one (each once).
    Gathered(Vec<&'a str>),
}

impl Default for Texts<'_> {
    fn default() -> Self {
        Texts::Gathered(Vec::new())
    }
}

impl<'a> Texts<'a> {
    /// Calls `f` with each text, in order.
    pub fn for_each(&self, mut f: impl FnMut(&'a str)) {
        match self {
            Texts::Slice(texts) => texts.iter().for_each(|t| f(t)),
            Texts::Regions(regions) => regions.iter().for_each(|r| f(&r.region)),
            Texts::Gathered(texts) => texts.iter().for_each(|t| f(t)),
        }
    }

    /// How many texts.
    pub fn len(&self) -> usize {
        match self {
            Texts::Slice(texts) => texts.len(),
            Texts::Regions(regions) => regions.len(),
            Texts::Gathered(texts) => texts.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `value` unless it is there.
    fn push_unique(&mut self, value: &'a str) {
        if !matches!(self, Texts::Gathered(_)) {
            let mut gathered = Vec::with_capacity(self.len() + 1);
            self.for_each(|t| gathered.push(t));
            *self = Texts::Gathered(gathered);
        }
        if let Texts::Gathered(texts) = self
            && !texts.contains(&value)
        {
            texts.push(value);
        }
    }
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
pub struct AnswerPart<'a> {
    /// Counter within the question, from 0.
    pub answer_id: i64,
    /// The part this one is a sub-answer of.
    pub parent_answer_id: Option<i64>,
    /// 0 for top level.
    pub answer_level: i32,
    /// main_answer, details, related_information.
    pub answer_type: &'static str,
    /// Text.
    pub text: Cow<'a, str>,
    /// Short text.
    pub name_tag: Option<&'a str>,
    /// Laterality.
    pub laterality: Option<&'a str>,
    /// Region names.
    pub regions: Texts<'a>,
    /// Findings.
    pub obs_entities: Texts<'a>,
    /// Their parents.
    pub obs_entities_parents: Texts<'a>,
    /// Categories.
    pub obs_categories: Texts<'a>,
    /// Subcategories.
    pub obs_subcategories: Texts<'a>,
    /// Certainty.
    pub certainty: Option<&'a str>,
    /// Positiveness.
    pub positiveness: Option<&'a str>,
    /// `[type, value]` pairs.
    pub modifiers: Vec<ModifierPair<'a>>,
    /// Per image.
    pub localization: Cow<'a, [Localization]>,
    /// From an observation node.
    pub from_report: bool,
    /// Observations it is derived from.
    pub obs_ids: Texts<'a>,
    /// Worst extraction quality of those.
    pub extraction_quality: Option<Cow<'a, ObsQuality>>,
}

/// One `qa` row without the study keys and the judged columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Question<'a> {
    /// `<template>_<NNN>`.
    pub question_id: String,
    /// The template id.
    pub question_type: &'a str,
    /// The strategy.
    pub question_strategy: &'static str,
    /// Variable bindings.
    pub variables: Vec<Variable>,
    /// Observations the answer is derived from.
    pub obs_ids: Vec<&'a str>,
    /// Any part from the report.
    pub contains_report_answers: bool,
    /// Any part from a template.
    pub contains_template_answers: bool,
    /// Worst over the observations.
    pub extraction_quality: Option<Cow<'a, ObsQuality>>,
    /// Worst localization per image over the parts.
    pub question_img_localization_quality: Vec<ImageQualityOut>,
    /// Question text.
    pub question: Cow<'a, str>,
    /// Answer parts, parents before children.
    pub answers: Vec<AnswerPart<'a>>,
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
    pub fn generate<'a>(&'a self, scene: &'a Scene) -> Vec<Question<'a>> {
        // About 230 questions per study: no regrowing (a question is a large struct).
        let mut out = Vec::with_capacity(256);
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
            let mut bindings: Vec<Binding<'a>> = Vec::new();
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
                            region: Some(*r),
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
                            finding: Some(*f),
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
    fn region_set<'a>(&'a self, scene: &'a Scene, set: RegionSet) -> BTreeSet<&'a str> {
        let settings = &self.templates.strategies.region_abnormal;
        let mut out = BTreeSet::new();
        match set {
            RegionSet::All => {
                out.extend(scene.graph.regions.iter().map(|r| r.region.as_str()));
                out.extend(settings.default_regions.iter().map(String::as_str));
                let seed = self.templates.strategies.seed;
                for (region, p) in &self.balance.regions {
                    if !out.contains(region.as_str())
                        && unit_hash(seed, &scene.graph.study_id, region) < *p
                    {
                        out.insert(region.as_str());
                    }
                }
            }
            RegionSet::Device => {
                out.extend(settings.device_regions.iter().map(String::as_str));
                for o in scene.obs() {
                    if o.kind() == ObsKind::Device {
                        out.extend(o.regions.iter().map(|r| r.region.as_str()));
                    }
                }
            }
        }
        out.retain(|r| self.reference.region(r).is_some());
        out
    }

    /// The findings and the devices asked about.
    fn finding_sets<'a>(&'a self, scene: &'a Scene) -> (BTreeSet<&'a str>, BTreeSet<&'a str>) {
        let settings = &self.templates.strategies.finding;
        let mut all = BTreeSet::new();
        for o in scene.obs() {
            all.extend(o.obs_entities.iter().map(String::as_str));
            all.extend(o.obs_entities_parents.iter().map(String::as_str));
        }
        all.extend(settings.default_findings.iter().map(String::as_str));
        all.extend(settings.default_devices.iter().map(String::as_str));
        let seed = self.templates.strategies.seed;
        for (finding, p) in &self.balance.findings {
            if !all.contains(finding.as_str())
                && unit_hash(seed, &scene.graph.study_id, finding) < *p
            {
                all.insert(finding.as_str());
            }
        }
        let mut findings = BTreeSet::new();
        let mut devices = BTreeSet::new();
        let normal = &self.templates.strategies.normal_findings;
        for name in all.into_iter().filter(|f| !normal.iter().any(|n| n == f)) {
            match self.reference.finding(name).map(|f| f.category.as_str()) {
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
                let related: [(Subset, ObsFilter<'_>); 5] = [
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
    fn question<'a>(
        &'a self,
        scene: &'a Scene,
        template: &'a Template,
        binding: &Binding<'a>,
        question_id: String,
    ) -> Option<Question<'a>> {
        let subsets = self.strategy(scene, template, binding);
        if template.strategy == Strategy::Indication && !subsets.oind {
            return None;
        }
        let obs = scene.obs();
        let fill = |text: &'a str| self.fill(text, scene, binding, &subsets);
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
        let mut obs_ids: Vec<&str> = Vec::new();
        for a in &answers {
            a.obs_ids.for_each(|id| {
                if !obs_ids.contains(&id) {
                    obs_ids.push(id);
                }
            });
        }
        let qualities = builder
            .used
            .iter()
            .filter_map(|&i| obs[i].obs_quality.as_ref());
        Some(Question {
            question_id,
            question_type: &template.id,
            question_strategy: template.strategy.as_str(),
            variables,
            obs_ids,
            contains_report_answers: answers.iter().any(|a| a.from_report),
            contains_template_answers: answers.iter().any(|a| !a.from_report),
            extraction_quality: worst(qualities),
            question_img_localization_quality: image_quality(&answers),
            question: fill(question_text),
            answers,
        })
    }

    /// The phrasing of `template` for this question (by hash, reproducible).
    fn pick<'a>(&self, template: &'a Template, scene: &Scene, question_id: &str) -> &'a str {
        let n = template.questions.len().max(1);
        let u = unit_hash(
            self.templates.strategies.seed,
            &scene.graph.study_id,
            question_id,
        );
        let index = ((u * n as f64) as usize).min(n - 1);
        template.questions.get(index).map_or("", String::as_str)
    }

    /// `text` with its placeholders filled.
    fn fill<'a>(
        &self,
        text: &'a str,
        scene: &Scene,
        binding: &Binding<'_>,
        subsets: &Subsets,
    ) -> Cow<'a, str> {
        if !text.contains('{') {
            return Cow::Borrowed(text);
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
        Cow::Owned(out)
    }

    /// A template answer part carrying the tags and boxes of `tagged` observations (and of
    /// the question's region or finding).
    fn template_part<'a>(
        &'a self,
        scene: &'a Scene,
        binding: &Binding<'a>,
        text: Cow<'a, str>,
        answer_type: AnswerType,
        tagged: &[usize],
    ) -> (AnswerPart<'a>, Vec<usize>) {
        let obs = scene.obs();
        let mut part = AnswerPart {
            answer_id: 0,
            parent_answer_id: None,
            answer_level: 0,
            answer_type: answer_type.as_str(),
            text,
            name_tag: None,
            laterality: None,
            regions: Texts::default(),
            obs_entities: Texts::default(),
            obs_entities_parents: Texts::default(),
            obs_categories: Texts::default(),
            obs_subcategories: Texts::default(),
            certainty: None,
            positiveness: None,
            modifiers: Vec::new(),
            localization: Cow::Borrowed(&[]),
            from_report: false,
            obs_ids: Texts::default(),
            extraction_quality: None,
        };
        if let Some(region) = binding.region {
            part.regions.push_unique(region);
            if let Some(node) = scene.region_node(region) {
                part.laterality = node.laterality.as_deref();
                merge_localization(&mut part.localization, &node.localization);
            }
            part.name_tag = Some(region);
        }
        if let Some(finding) = binding.finding {
            part.obs_entities.push_unique(finding);
            if let Some(info) = self.reference.finding(finding) {
                part.obs_categories.push_unique(&info.category);
                for s in &info.subcategories {
                    part.obs_subcategories.push_unique(s);
                }
                for p in &info.parents {
                    part.obs_entities_parents.push_unique(p);
                }
            }
            part.name_tag = Some(finding);
        }
        let mut lateralities: Vec<&str> = Vec::new();
        let mut any_pos = false;
        let mut certain = false;
        for &i in tagged {
            let o = &obs[i];
            for r in &o.regions {
                part.regions.push_unique(&r.region);
            }
            for e in &o.obs_entities {
                part.obs_entities.push_unique(e);
            }
            for e in &o.obs_entities_parents {
                part.obs_entities_parents.push_unique(e);
            }
            for c in &o.obs_categories {
                part.obs_categories.push_unique(c);
            }
            for c in &o.obs_subcategories {
                part.obs_subcategories.push_unique(c);
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
            part.obs_ids.push_unique(&o.obs_id);
        }
        if part.laterality.is_none() {
            part.laterality = match lateralities.as_slice() {
                [] => None,
                [one] => Some(one),
                _ => Some("unknown"),
            };
        }
        part.positiveness = Some(if any_pos { "pos" } else { "neg" });
        part.certainty = Some(if !any_pos || certain {
            "certain"
        } else {
            "likely"
        });
        part.extraction_quality = worst(tagged.iter().filter_map(|&i| obs[i].obs_quality.as_ref()));
        (part, tagged.to_vec())
    }

    fn push_subset<'a>(
        &'a self,
        builder: &mut AnswerBuilder<'a>,
        scene: &'a Scene,
        binding: &Binding<'a>,
        part: &'a Part,
        subsets: &Subsets,
        fill: &dyn Fn(&'a str) -> Cow<'a, str>,
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
    parts: Vec<AnswerPart<'a>>,
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
        (mut part, tagged): (AnswerPart<'a>, Vec<usize>),
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

    fn push_obs_node(&mut self, o: &'a Obs, answer_type: AnswerType, parent: Option<i64>) -> i64 {
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
                value: v,
            }));
        }
        let text = o
            .summary_sentence
            .as_deref()
            .or(o.name.as_deref())
            .unwrap_or_default();
        self.parts.push(AnswerPart {
            answer_id: id,
            parent_answer_id: parent,
            answer_level: self.level_of(parent),
            answer_type: answer_type.as_str(),
            text: Cow::Borrowed(text),
            name_tag: o.name.as_deref(),
            laterality: o.laterality.as_deref(),
            regions: Texts::Regions(&o.regions),
            obs_entities: Texts::Slice(&o.obs_entities),
            obs_entities_parents: Texts::Slice(&o.obs_entities_parents),
            obs_categories: Texts::Slice(&o.obs_categories),
            obs_subcategories: Texts::Slice(&o.obs_subcategories),
            certainty: o.certainty.as_deref(),
            positiveness: o.positiveness.as_deref(),
            modifiers,
            localization: Cow::Borrowed(&o.localization),
            from_report: o.from_report.unwrap_or(true),
            obs_ids: Texts::Slice(std::slice::from_ref(&o.obs_id)),
            extraction_quality: o.obs_quality.as_ref().map(Cow::Borrowed),
        });
        id
    }
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// The worst extraction quality of `qualities` (borrowed when there is one).
fn worst<'a>(
    qualities: impl Iterator<Item = &'a ObsQuality> + Clone,
) -> Option<Cow<'a, ObsQuality>> {
    let mut first_two = qualities.clone();
    match (first_two.next(), first_two.next()) {
        (None, _) => None,
        (Some(only), None) => Some(Cow::Borrowed(only)),
        _ => worst_quality(qualities).map(Cow::Owned),
    }
}

/// Adds `more` to `into`, image by image (boxes and ids appended, quality the worse one);
/// merging into nothing borrows `more` (when its images are distinct, as in scene graphs).
fn merge_localization<'a>(into: &mut Cow<'a, [Localization]>, more: &'a [Localization]) {
    let distinct = |ls: &[Localization]| {
        ls.iter()
            .enumerate()
            .all(|(i, l)| ls[..i].iter().all(|x| x.image_id != l.image_id))
    };
    if more.is_empty() {
        return;
    }
    if into.is_empty() && distinct(more) {
        *into = Cow::Borrowed(more);
        return;
    }
    let into = into.to_mut();
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
fn image_quality(parts: &[AnswerPart<'_>]) -> Vec<ImageQualityOut> {
    let mut out: Vec<ImageQualityOut> = Vec::new();
    for l in parts.iter().flat_map(|p| p.localization.iter()) {
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
