//! The QA templates of cxrlake (paper 000, section 3.2, appendix E.2, tables 13–15) and the
//! settings of the four strategies, as data files in the top-level `templates/` folder.
//!
//! ```text
//!  templates/*.toml ──parse──▶ Template (questions, variables, filter, main cases, parts)
//!  strategies.toml  ──parse──▶ Strategies (default items, sampling rates, seed)
//!                      └─check against RefDefs──▶ Templates { version = "<v>+<sha256/12>" }
//! ```
//!
//! See `templates/README.md` for the file format and what the engine does with it.

mod error;

use std::collections::BTreeSet;
use std::path::Path;

use cxrlake_refdefs::RefDefs;
use serde::{Deserialize, Deserializer};
use sha2::{Digest, Sha256};

pub use error::{Error, Result};

/// The embedded files, as the repository's `templates/` had them at compile time.
const EMBEDDED: [(&str, &str); 28] = [
    (
        "strategies.toml",
        include_str!("../../../templates/strategies.toml"),
    ),
    (
        "A_indication.toml",
        include_str!("../../../templates/A_indication.toml"),
    ),
    (
        "B01_describe_all.toml",
        include_str!("../../../templates/B01_describe_all.toml"),
    ),
    (
        "B02_describe_abnormal.toml",
        include_str!("../../../templates/B02_describe_abnormal.toml"),
    ),
    (
        "B03_is_abnormal.toml",
        include_str!("../../../templates/B03_is_abnormal.toml"),
    ),
    (
        "B04_is_normal.toml",
        include_str!("../../../templates/B04_is_normal.toml"),
    ),
    (
        "B08_describe_subcat.toml",
        include_str!("../../../templates/B08_describe_subcat.toml"),
    ),
    (
        "B09_describe_abnormal_subcat.toml",
        include_str!("../../../templates/B09_describe_abnormal_subcat.toml"),
    ),
    (
        "B10_is_abnormal_subcat.toml",
        include_str!("../../../templates/B10_is_abnormal_subcat.toml"),
    ),
    (
        "B11_is_normal_subcat.toml",
        include_str!("../../../templates/B11_is_normal_subcat.toml"),
    ),
    (
        "B12_describe_device.toml",
        include_str!("../../../templates/B12_describe_device.toml"),
    ),
    (
        "B13_has_devices.toml",
        include_str!("../../../templates/B13_has_devices.toml"),
    ),
    (
        "B14_describe_acquisition.toml",
        include_str!("../../../templates/B14_describe_acquisition.toml"),
    ),
    (
        "B15_describe_imaging_artifacts.toml",
        include_str!("../../../templates/B15_describe_imaging_artifacts.toml"),
    ),
    (
        "B16_has_imaging_artifacts.toml",
        include_str!("../../../templates/B16_has_imaging_artifacts.toml"),
    ),
    (
        "C01_describe_region.toml",
        include_str!("../../../templates/C01_describe_region.toml"),
    ),
    (
        "C02_describe_abnormal_region.toml",
        include_str!("../../../templates/C02_describe_abnormal_region.toml"),
    ),
    (
        "C03_is_abnormal_region.toml",
        include_str!("../../../templates/C03_is_abnormal_region.toml"),
    ),
    (
        "C04_is_normal_region.toml",
        include_str!("../../../templates/C04_is_normal_region.toml"),
    ),
    (
        "C07_describe_region_device.toml",
        include_str!("../../../templates/C07_describe_region_device.toml"),
    ),
    (
        "C08_has_region_device.toml",
        include_str!("../../../templates/C08_has_region_device.toml"),
    ),
    (
        "D01_describe_finding.toml",
        include_str!("../../../templates/D01_describe_finding.toml"),
    ),
    (
        "D02_has_finding.toml",
        include_str!("../../../templates/D02_has_finding.toml"),
    ),
    (
        "D03_where_is_finding.toml",
        include_str!("../../../templates/D03_where_is_finding.toml"),
    ),
    (
        "D04_how_severe_is_finding.toml",
        include_str!("../../../templates/D04_how_severe_is_finding.toml"),
    ),
    (
        "D05_describe_device.toml",
        include_str!("../../../templates/D05_describe_device.toml"),
    ),
    (
        "D06_has_device.toml",
        include_str!("../../../templates/D06_has_device.toml"),
    ),
    (
        "D07_where_is_device.toml",
        include_str!("../../../templates/D07_where_is_device.toml"),
    ),
];

/// The settings file's name.
pub const STRATEGIES_FILE: &str = "strategies.toml";

/// A QA strategy (E.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The indication as the question.
    Indication,
    /// Study abnormality (table 13).
    Abnormal,
    /// Region abnormality (table 14).
    RegionAbnormal,
    /// Findings and devices (table 15).
    Finding,
}

impl Strategy {
    /// The name written to `qa.question_strategy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Indication => "indication",
            Strategy::Abnormal => "abnormal",
            Strategy::RegionAbnormal => "region_abnormal",
            Strategy::Finding => "finding",
        }
    }

    /// The subsets this strategy returns.
    pub fn subsets(self) -> &'static [Subset] {
        use Subset::*;
        match self {
            Strategy::Indication => &[Indication, Associated],
            Strategy::Abnormal => &[FindingPos, FindingNeg, DevicePos, DeviceNeg, Acquisition],
            Strategy::RegionAbnormal => &[
                FindingPos,
                FindingNeg,
                DevicePos,
                DeviceNeg,
                Acquisition,
                RelatedRegions,
            ],
            Strategy::Finding => &[
                FindingPos,
                FindingNeg,
                DevicePos,
                DeviceNeg,
                Acquisition,
                ParentFindings,
                SameSubcat,
                Correlated,
                Indications,
                IndicativeOf,
            ],
        }
    }

    /// Placeholders this strategy can fill (besides `{subcategory}` from a variable).
    fn placeholders(self) -> &'static [&'static str] {
        match self {
            Strategy::Indication => &["indication"],
            Strategy::Abnormal => &[],
            Strategy::RegionAbnormal => &["region", "locations", "severity"],
            Strategy::Finding => &["finding", "locations", "severity"],
        }
    }
}

/// A named observation subset a strategy returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subset {
    /// Positive findings.
    FindingPos,
    /// Negative findings.
    FindingNeg,
    /// Positive devices.
    DevicePos,
    /// Negative devices.
    DeviceNeg,
    /// Acquisition and artifact observations.
    Acquisition,
    /// Positive observations in parent regions or at the other side.
    RelatedRegions,
    /// Positive observations of parent findings.
    ParentFindings,
    /// Positive observations of findings with a shared subcategory.
    SameSubcat,
    /// Positive observations of correlated findings.
    Correlated,
    /// Positive observations of findings the finding is indicative of.
    Indications,
    /// Positive observations of findings indicative of the finding.
    IndicativeOf,
    /// The indication node `OIND`.
    Indication,
    /// The indication's associated observations.
    Associated,
}

impl Subset {
    /// Every subset, in index order.
    pub const ALL: [Subset; 13] = [
        Subset::FindingPos,
        Subset::FindingNeg,
        Subset::DevicePos,
        Subset::DeviceNeg,
        Subset::Acquisition,
        Subset::RelatedRegions,
        Subset::ParentFindings,
        Subset::SameSubcat,
        Subset::Correlated,
        Subset::Indications,
        Subset::IndicativeOf,
        Subset::Indication,
        Subset::Associated,
    ];

    /// Number of subsets (for arrays indexed by subset).
    pub const COUNT: usize = Self::ALL.len();

    /// Index for arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name in template files.
    pub fn as_str(self) -> &'static str {
        match self {
            Subset::FindingPos => "finding_pos",
            Subset::FindingNeg => "finding_neg",
            Subset::DevicePos => "device_pos",
            Subset::DeviceNeg => "device_neg",
            Subset::Acquisition => "acquisition",
            Subset::RelatedRegions => "related_regions",
            Subset::ParentFindings => "parent_findings",
            Subset::SameSubcat => "same_subcat",
            Subset::Correlated => "correlated",
            Subset::Indications => "indications",
            Subset::IndicativeOf => "indicative_of",
            Subset::Indication => "indication",
            Subset::Associated => "associated",
        }
    }

    fn parse(name: &str) -> Option<Subset> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// What a condition tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The subset is non-empty.
    NonEmpty(Subset),
    /// Every positive finding or device observation is less than certain.
    Uncertain,
    /// A positive observation has a severity modifier.
    Severity,
    /// A positive observation has regions.
    Located,
    /// Any observation of the five main subsets exists.
    Mentioned,
}

/// One `when` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    /// `!name`.
    pub negated: bool,
    /// The test.
    pub test: Test,
}

impl Condition {
    fn parse(text: &str) -> std::result::Result<Condition, String> {
        let (negated, name) = match text.strip_prefix('!') {
            Some(rest) => (true, rest.trim()),
            None => (false, text.trim()),
        };
        let test = match name {
            "uncertain" => Test::Uncertain,
            "severity" => Test::Severity,
            "located" => Test::Located,
            "mentioned" => Test::Mentioned,
            other => Test::NonEmpty(Subset::parse(other).ok_or_else(|| {
                format!(
                    "unknown condition {other:?}: use a subset name or uncertain, severity, \
                     located, mentioned (optionally negated with !)"
                )
            })?),
        };
        Ok(Condition { negated, test })
    }
}

/// `when`: all conditions must hold (none: always).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct When(pub Vec<Condition>);

impl<'de> Deserialize<'de> for When {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<When, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        let names = match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(name) => vec![name],
            OneOrMany::Many(names) => names,
        };
        names
            .iter()
            .map(|n| Condition::parse(n))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(When)
            .map_err(serde::de::Error::custom)
    }
}

/// Answer part types (D.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerType {
    /// Required to answer the question.
    MainAnswer,
    /// Optional details of the main answer.
    Details,
    /// Context.
    RelatedInformation,
}

impl AnswerType {
    /// The name written to `answer_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerType::MainAnswer => "main_answer",
            AnswerType::Details => "details",
            AnswerType::RelatedInformation => "related_information",
        }
    }
}

/// One value of a list variable.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariableValue {
    /// The value (`subcategory`: one name or several joined by commas).
    pub value: String,
    /// The phrase substituted for the placeholder.
    pub text: String,
}

/// List variables: one question per value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variables {
    /// Subcategories (`{subcategory}`).
    #[serde(default)]
    pub subcategory: Vec<VariableValue>,
}

/// Observation filter applied before the strategy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Keep observations with one of these categories.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Keep observations with one of these subcategories (`{subcategory}` allowed).
    #[serde(default)]
    pub subcategories: Vec<String>,
}

/// A template main answer case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MainCase {
    /// When this case applies (first match wins).
    #[serde(default)]
    pub when: When,
    /// The answer text with placeholders.
    pub text: String,
    /// Subsets whose tags and boxes the answer carries.
    #[serde(default)]
    pub tags_from: Vec<SubsetName>,
}

/// A subset name as written in a file (validated per strategy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubsetName(pub Subset);

impl<'de> Deserialize<'de> for SubsetName {
    fn deserialize<D: Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<SubsetName, D::Error> {
        let name = String::deserialize(deserializer)?;
        Subset::parse(&name)
            .map(SubsetName)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown subset {name:?}")))
    }
}

/// One answer-part entry: a subset converted to answer parts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The subset.
    pub subset: SubsetName,
    /// Type of the parts.
    pub answer_type: AnswerType,
    /// Skipped unless this holds.
    #[serde(default)]
    pub when: When,
    /// Template part before a non-empty subset.
    pub prefix: Option<String>,
    /// Template part in place of an empty subset.
    pub fallback: Option<String>,
}

/// Which regions a region-strategy template asks about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionSet {
    /// The study's region nodes, the default regions and sampled regions.
    #[default]
    All,
    /// `device_regions` and the regions of device observations.
    Device,
}

/// Which findings a finding-strategy template asks about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Anything but devices.
    #[default]
    Finding,
    /// Devices.
    Device,
}

/// One template file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// `B03_is_abnormal`; question ids are `<id>_<NNN>`.
    pub id: String,
    /// The strategy.
    pub strategy: Strategy,
    /// Question phrasings (one picked per question by hash).
    pub questions: Vec<String>,
    /// Region set (region strategy).
    #[serde(default)]
    pub region_set: RegionSet,
    /// Finding kind (finding strategy).
    #[serde(default)]
    pub finding_kind: FindingKind,
    /// List variables.
    #[serde(default)]
    pub variables: Variables,
    /// Observation filter.
    #[serde(default)]
    pub filter: Filter,
    /// Template main answer cases.
    #[serde(default)]
    pub main: Vec<MainCase>,
    /// Answer parts from subsets, in order.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// Settings of the region strategy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionSettings {
    /// Always asked.
    pub default_regions: Vec<String>,
    /// Sampling rate.
    pub rate: f64,
    /// The region set of `region_set = "device"` templates.
    pub device_regions: Vec<String>,
}

/// Settings of the finding strategy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSettings {
    /// Always asked (non-device findings).
    pub default_findings: Vec<String>,
    /// Always asked (devices).
    pub default_devices: Vec<String>,
    /// Sampling rate.
    pub rate: f64,
    /// Correlated findings kept per finding.
    pub correlated_per_finding: usize,
}

/// `strategies.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Strategies {
    /// Bumped on purpose.
    pub version: String,
    /// Sampling seed.
    pub seed: u64,
    /// Findings stating normality (positive mentions count as negative findings).
    pub normal_findings: Vec<String>,
    /// Region strategy.
    pub region_abnormal: RegionSettings,
    /// Finding strategy.
    pub finding: FindingSettings,
}

/// A validated templates folder.
#[derive(Debug, Clone)]
pub struct Templates {
    /// Strategy settings.
    pub strategies: Strategies,
    /// Templates in id order.
    pub templates: Vec<Template>,
    version: String,
    /// The `(file name, text)` pairs it was parsed from, in name order.
    files: Vec<(String, String)>,
}

impl Templates {
    /// The templates embedded in this build, checked against `defs`.
    pub fn embedded(defs: &RefDefs) -> Result<Templates> {
        let files = EMBEDDED
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect();
        Self::from_files(files, defs)
    }

    /// Loads every `*.toml` of `dir` (`strategies.toml` and one file per template).
    pub fn load(dir: &Path, defs: &RefDefs) -> Result<Templates> {
        let io = |source| Error::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((name, text));
        }
        Self::from_files(files, defs)
    }

    /// Parses and validates `(file name, text)` pairs.
    pub fn from_files(mut files: Vec<(String, String)>, defs: &RefDefs) -> Result<Templates> {
        files.sort();
        let mut hasher = Sha256::new();
        for (name, text) in &files {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(text.as_bytes());
            hasher.update([0]);
        }
        let digest = hex::encode(hasher.finalize());
        let (settings, templates): (Vec<_>, Vec<_>) =
            files.iter().partition(|(name, _)| name == STRATEGIES_FILE);
        let (_, settings) = settings.first().ok_or_else(|| {
            Error::invalid(
                STRATEGIES_FILE,
                "missing: a templates folder needs strategies.toml (copy the repository's)",
            )
        })?;
        let strategies: Strategies =
            toml::from_str(settings).map_err(|e| Error::invalid(STRATEGIES_FILE, e.to_string()))?;
        check_strategies(&strategies, defs)?;
        let mut parsed = Vec::new();
        let mut ids = BTreeSet::new();
        for (name, text) in templates {
            let template: Template =
                toml::from_str(text).map_err(|e| Error::invalid(name, e.to_string()))?;
            check_template(name, &template, defs)?;
            if !ids.insert(template.id.clone()) {
                return Err(Error::invalid(
                    name,
                    format!("duplicate id {}", template.id),
                ));
            }
            parsed.push(template);
        }
        parsed.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Templates {
            version: format!("{}+{}", strategies.version, &digest[..12]),
            strategies,
            templates: parsed,
            files,
        })
    }

    /// `"<strategies version>+<12 hex of sha256 over every file>"`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `(file name, text)` pairs it was parsed from ([`Templates::from_files`] builds the
    /// same templates from them).
    pub fn files(&self) -> &[(String, String)] {
        &self.files
    }

    /// The template `id`.
    pub fn get(&self, id: &str) -> Option<&Template> {
        self.templates.iter().find(|t| t.id == id)
    }
}

fn check_strategies(s: &Strategies, defs: &RefDefs) -> Result<()> {
    let bad = |reason: String| Err(Error::invalid(STRATEGIES_FILE, reason));
    let regions = &s.region_abnormal;
    for region in regions
        .default_regions
        .iter()
        .chain(&regions.device_regions)
    {
        if defs.region(region).is_none() {
            return bad(format!(
                "region {region:?} is not in refdefs/regions.toml: use a region name"
            ));
        }
    }
    let findings = &s.finding;
    let named = findings
        .default_findings
        .iter()
        .chain(&findings.default_devices)
        .chain(&s.normal_findings);
    for finding in named {
        if defs.finding(finding).is_none() {
            return bad(format!(
                "finding {finding:?} is not in refdefs/findings.toml: use a finding name"
            ));
        }
    }
    for (name, rate) in [
        ("region_abnormal", regions.rate),
        ("finding", findings.rate),
    ] {
        if !(0.0..=1.0).contains(&rate) {
            return bad(format!("[{name}] rate {rate} is not between 0 and 1"));
        }
    }
    Ok(())
}

/// The `{name}` placeholders of `text`.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push(&rest[start + 1..start + len]);
        rest = &rest[start + len + 1..];
    }
    out
}

fn check_template(file: &str, t: &Template, defs: &RefDefs) -> Result<()> {
    let bad = |reason: String| Err(Error::invalid(file, reason));
    if file.strip_suffix(".toml") != Some(t.id.as_str()) {
        return bad(format!("id {:?} must equal the file name", t.id));
    }
    if t.questions.is_empty() {
        return bad("no questions: give at least one phrasing".into());
    }
    if t.parts.is_empty() && t.main.is_empty() {
        return bad("neither [[main]] nor [[parts]]: the template has no answer".into());
    }
    let subsets = t.strategy.subsets();
    let known = |s: Subset| subsets.contains(&s);
    let mut allowed: Vec<&str> = t.strategy.placeholders().to_vec();
    if !t.variables.subcategory.is_empty() {
        allowed.push("subcategory");
    }
    let texts = t
        .questions
        .iter()
        .chain(t.main.iter().map(|m| &m.text))
        .chain(t.parts.iter().filter_map(|p| p.prefix.as_ref()))
        .chain(t.parts.iter().filter_map(|p| p.fallback.as_ref()));
    for text in texts {
        for name in placeholders(text) {
            if !allowed.contains(&name) {
                return bad(format!(
                    "placeholder {{{name}}} in {text:?} cannot be filled by the {} strategy \
                     (allowed: {})",
                    t.strategy.as_str(),
                    allowed.join(", ")
                ));
            }
        }
    }
    let whens = t
        .main
        .iter()
        .map(|m| &m.when)
        .chain(t.parts.iter().map(|p| &p.when));
    for when in whens {
        for c in &when.0 {
            if let Test::NonEmpty(s) = c.test
                && !known(s)
            {
                return bad(format!(
                    "condition on subset {} which the {} strategy does not return",
                    s.as_str(),
                    t.strategy.as_str()
                ));
            }
        }
    }
    let used = t
        .parts
        .iter()
        .map(|p| p.subset.0)
        .chain(t.main.iter().flat_map(|m| m.tags_from.iter().map(|s| s.0)));
    for s in used {
        if !known(s) {
            return bad(format!(
                "subset {} is not returned by the {} strategy (it returns {})",
                s.as_str(),
                t.strategy.as_str(),
                subsets
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for v in &t.variables.subcategory {
        for sub in v.value.split(',').map(str::trim) {
            if !defs.subcategories().any(|s| s == sub) {
                return bad(format!(
                    "subcategory {sub:?} is used by no finding of refdefs/findings.toml"
                ));
            }
        }
    }
    let uses_variable = t.filter.subcategories.iter().any(|s| s == "{subcategory}");
    if uses_variable && t.variables.subcategory.is_empty() {
        return bad("filter uses {subcategory} but [variables] has no subcategory list".into());
    }
    if t.strategy != Strategy::RegionAbnormal && t.region_set != RegionSet::All {
        return bad("region_set only applies to the region_abnormal strategy".into());
    }
    Ok(())
}
