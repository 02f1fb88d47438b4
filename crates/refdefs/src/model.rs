//! Typed reference-definition entries, deserialized from the TOML files with source spans.
//!
//! Every name that can be wrong carries its byte span ([`Spanned`]) so diagnostics can point to
//! a file and line. Spans never take part in hashing or comparison: `Spanned` serializes and
//! compares only its value.

use serde::{Deserialize, Serialize};
pub use toml::Spanned;

/// A name or synonym with its position in the source file.
pub type Name = Spanned<String>;

fn is_empty<T>(list: &[T]) -> bool {
    list.is_empty()
}

/// Laterality of a region (paper D.1, region node `laterality`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Laterality {
    /// A structure of the left side.
    Left,
    /// A structure of the right side.
    Right,
    /// A pair of left and right structures.
    Bilateral,
    /// Midline or not clearly assignable to one side.
    Unknown,
}

impl Laterality {
    /// All values, in the order they are documented.
    pub const ALL: [Laterality; 4] = [Self::Left, Self::Right, Self::Bilateral, Self::Unknown];

    /// The lower-case name used in the files and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Bilateral => "bilateral",
            Self::Unknown => "unknown",
        }
    }
}

/// How a region's boxes are derived (paper E.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecipeKind {
    /// Box around one CXAS mask (several classes: around their union).
    Cxas,
    /// A Chest ImaGenome box (several: their super box).
    Imagenome,
    /// Two boxes, one per side, not fused.
    Bilateral,
    /// One box around all listed child regions.
    SuperBox,
    /// Intersection of masks or boxes.
    Intersection,
    /// Union of masks or boxes.
    Union,
    /// Not localized (e.g. interstitium).
    None,
}

impl RecipeKind {
    /// All values, in the order they are documented.
    pub const ALL: [RecipeKind; 7] = [
        Self::Cxas,
        Self::Imagenome,
        Self::Bilateral,
        Self::SuperBox,
        Self::Intersection,
        Self::Union,
        Self::None,
    ];

    /// The snake-case name used in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cxas => "cxas",
            Self::Imagenome => "imagenome",
            Self::Bilateral => "bilateral",
            Self::SuperBox => "super_box",
            Self::Intersection => "intersection",
            Self::Union => "union",
            Self::None => "none",
        }
    }
}

/// Whether an intersection or union combines pixel masks or boxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// Combine segmentation masks pixel-wise, then take the box.
    Mask,
    /// Combine boxes.
    Box,
}

/// The `[region.localization]` table as written; [`Localization::recipe`] turns it into a [`Recipe`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Localization {
    /// Recipe kind.
    pub kind: Spanned<RecipeKind>,
    /// `cxas`: CXAS class names.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub classes: Vec<Name>,
    /// `imagenome`: Chest ImaGenome box names.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub boxes: Vec<Name>,
    /// `bilateral`: the left region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<Name>,
    /// `bilateral`: the right region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<Name>,
    /// `super_box`: the child regions.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub children: Vec<Name>,
    /// `intersection` / `union`: mask or box space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<Spanned<Space>>,
    /// `intersection` / `union`: operands `cxas:<class>`, `imagenome:<box>` or `region:<name>`.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub of: Vec<Name>,
}

/// One operand of an intersection or union.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A CXAS mask class.
    Cxas(String),
    /// A Chest ImaGenome box.
    Imagenome(String),
    /// Another region's localization.
    Region(String),
}

impl Operand {
    /// Parses `cxas:<class>`, `imagenome:<box>` or `region:<name>`.
    pub fn parse(text: &str) -> Option<Operand> {
        let (prefix, name) = text.split_once(':')?;
        let name = name.to_string();
        match prefix {
            "cxas" => Some(Self::Cxas(name)),
            "imagenome" => Some(Self::Imagenome(name)),
            "region" => Some(Self::Region(name)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cxas(n) => write!(f, "cxas:{n}"),
            Self::Imagenome(n) => write!(f, "imagenome:{n}"),
            Self::Region(n) => write!(f, "region:{n}"),
        }
    }
}

impl Serialize for Operand {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A validated localization recipe, the form the localization stage consumes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recipe {
    /// Box around the (union of the) CXAS masks.
    Cxas {
        /// CXAS class names.
        classes: Vec<String>,
    },
    /// Chest ImaGenome box(es).
    Imagenome {
        /// Box names.
        boxes: Vec<String>,
    },
    /// Two boxes (left and right region), not fused.
    Bilateral {
        /// Left region.
        left: String,
        /// Right region.
        right: String,
    },
    /// One box around the children's boxes.
    SuperBox {
        /// Child regions.
        children: Vec<String>,
    },
    /// Intersection of masks or boxes.
    Intersection {
        /// Mask or box space.
        space: Space,
        /// Operands (at least two).
        of: Vec<Operand>,
    },
    /// Union of masks or boxes.
    Union {
        /// Mask or box space.
        space: Space,
        /// Operands (at least two).
        of: Vec<Operand>,
    },
    /// Not localized.
    None,
}

impl Recipe {
    /// The recipe's kind.
    pub fn kind(&self) -> RecipeKind {
        match self {
            Self::Cxas { .. } => RecipeKind::Cxas,
            Self::Imagenome { .. } => RecipeKind::Imagenome,
            Self::Bilateral { .. } => RecipeKind::Bilateral,
            Self::SuperBox { .. } => RecipeKind::SuperBox,
            Self::Intersection { .. } => RecipeKind::Intersection,
            Self::Union { .. } => RecipeKind::Union,
            Self::None => RecipeKind::None,
        }
    }

    /// Regions this recipe is computed from (its localization dependencies).
    pub fn region_dependencies(&self) -> Vec<&str> {
        match self {
            Self::Bilateral { left, right } => vec![left.as_str(), right.as_str()],
            Self::SuperBox { children } => children.iter().map(String::as_str).collect(),
            Self::Intersection { of, .. } | Self::Union { of, .. } => of
                .iter()
                .filter_map(|op| match op {
                    Operand::Region(name) => Some(name.as_str()),
                    _ => None,
                })
                .collect(),
            Self::Cxas { .. } | Self::Imagenome { .. } | Self::None => Vec::new(),
        }
    }
}

/// What is wrong with a `[region.localization]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeProblem {
    /// Byte span of the offending value.
    pub span: std::ops::Range<usize>,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl Localization {
    /// Checks that exactly the fields of `kind` are set and converts to a [`Recipe`].
    pub fn recipe(&self) -> Result<Recipe, RecipeProblem> {
        let kind = *self.kind.get_ref();
        let used: &[&str] = match kind {
            RecipeKind::Cxas => &["classes"],
            RecipeKind::Imagenome => &["boxes"],
            RecipeKind::Bilateral => &["left", "right"],
            RecipeKind::SuperBox => &["children"],
            RecipeKind::Intersection | RecipeKind::Union => &["space", "of"],
            RecipeKind::None => &[],
        };
        let present = [
            ("classes", self.classes.first().map(Spanned::span)),
            ("boxes", self.boxes.first().map(Spanned::span)),
            ("left", self.left.as_ref().map(Spanned::span)),
            ("right", self.right.as_ref().map(Spanned::span)),
            ("children", self.children.first().map(Spanned::span)),
            ("space", self.space.as_ref().map(Spanned::span)),
            ("of", self.of.first().map(Spanned::span)),
        ];
        for (field, span) in &present {
            if let Some(span) = span
                && !used.contains(field)
            {
                return Err(RecipeProblem {
                    span: span.clone(),
                    message: format!(
                        "field `{field}` is not used by localization kind `{}`",
                        kind.as_str()
                    ),
                    hint: format!(
                        "kind `{}` takes {}; remove `{field}` or change `kind`",
                        kind.as_str(),
                        describe_fields(used)
                    ),
                });
            }
        }
        let missing = |field: &str| RecipeProblem {
            span: self.kind.span(),
            message: format!(
                "localization kind `{}` needs a non-empty `{field}`",
                kind.as_str()
            ),
            hint: format!("add `{field} = ...` to this [region.localization] table"),
        };
        let names = |list: &[Name]| list.iter().map(|n| n.get_ref().clone()).collect::<Vec<_>>();
        let recipe = match kind {
            RecipeKind::Cxas if self.classes.is_empty() => return Err(missing("classes")),
            RecipeKind::Cxas => Recipe::Cxas {
                classes: names(&self.classes),
            },
            RecipeKind::Imagenome if self.boxes.is_empty() => return Err(missing("boxes")),
            RecipeKind::Imagenome => Recipe::Imagenome {
                boxes: names(&self.boxes),
            },
            RecipeKind::Bilateral => {
                let left = self.left.as_ref().ok_or_else(|| missing("left"))?;
                let right = self.right.as_ref().ok_or_else(|| missing("right"))?;
                Recipe::Bilateral {
                    left: left.get_ref().clone(),
                    right: right.get_ref().clone(),
                }
            }
            RecipeKind::SuperBox if self.children.is_empty() => return Err(missing("children")),
            RecipeKind::SuperBox => Recipe::SuperBox {
                children: names(&self.children),
            },
            RecipeKind::Intersection | RecipeKind::Union => {
                let space = *self
                    .space
                    .as_ref()
                    .ok_or_else(|| missing("space"))?
                    .get_ref();
                if self.of.len() < 2 {
                    return Err(RecipeProblem {
                        span: self.of.first().map_or_else(|| self.kind.span(), Spanned::span),
                        message: format!(
                            "localization kind `{}` needs at least two operands in `of`",
                            kind.as_str()
                        ),
                        hint: "list two or more operands, e.g. of = [\"cxas:left lung\", \"cxas:heart\"]".into(),
                    });
                }
                let mut of = Vec::with_capacity(self.of.len());
                for operand in &self.of {
                    of.push(Operand::parse(operand.get_ref()).ok_or_else(|| RecipeProblem {
                        span: operand.span(),
                        message: format!("operand `{}` has no known source prefix", operand.get_ref()),
                        hint: "write operands as `cxas:<class>`, `imagenome:<box>` or `region:<name>`".into(),
                    })?);
                }
                if kind == RecipeKind::Intersection {
                    Recipe::Intersection { space, of }
                } else {
                    Recipe::Union { space, of }
                }
            }
            RecipeKind::None => Recipe::None,
        };
        Ok(recipe)
    }
}

fn describe_fields(fields: &[&str]) -> String {
    if fields.is_empty() {
        "no other fields".into()
    } else {
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// One anatomical region (`[[region]]` in regions.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Unique lower-case name, e.g. "left lower lobe".
    pub name: Name,
    /// Other terms mapped onto this region.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub synonyms: Vec<Name>,
    /// Side of the body.
    pub laterality: Spanned<Laterality>,
    /// The left counterpart (for right and bilateral regions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<Name>,
    /// The right counterpart (for left and bilateral regions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<Name>,
    /// The bilateral region this one is a side of (for left and right regions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bilateral: Option<Name>,
    /// Parent in the region tree (absent for roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Name>,
    /// Coarser regions to use, in order, when this one cannot be localized on an image.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub fallbacks: Vec<Name>,
    /// How boxes are derived.
    pub localization: Spanned<Localization>,
}

impl Region {
    /// The counterpart link for one side (`left`, `right` or `bilateral`).
    pub fn link(&self, side: Laterality) -> Option<&Name> {
        match side {
            Laterality::Left => self.left.as_ref(),
            Laterality::Right => self.right.as_ref(),
            Laterality::Bilateral => self.bilateral.as_ref(),
            Laterality::Unknown => None,
        }
    }

    /// Whether the region has a localization recipe other than `none`.
    pub fn is_localized(&self) -> bool {
        *self.localization.get_ref().kind.get_ref() != RecipeKind::None
    }
}

/// One finding, disease, device or technical class (`[[finding]]` in findings.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Unique lower-case name, e.g. "pleural effusion".
    pub name: Name,
    /// Other terms mapped onto this finding.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub synonyms: Vec<Name>,
    /// Main category, one of the file's `categories`.
    pub category: Name,
    /// Subcategories, each one of the file's `subcategories`.
    pub subcategories: Vec<Name>,
    /// More general findings.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub parents: Vec<Name>,
    /// Regions assumed when a report gives none.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub default_regions: Vec<Name>,
    /// Findings (usually diseases) this one points to.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub indicative_of: Vec<Name>,
}

/// Modifier types (paper D.1, observation `modifiers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModifierType {
    /// How pronounced (mild, moderate, severe).
    Severity,
    /// Appearance (patchy, nodular, reticular).
    Texture,
    /// Distribution (focal, multifocal, diffuse).
    Spread,
    /// Time course (acute, chronic).
    Temporal,
}

impl ModifierType {
    /// All values, in the order they are documented.
    pub const ALL: [ModifierType; 4] =
        [Self::Severity, Self::Texture, Self::Spread, Self::Temporal];

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Severity => "severity",
            Self::Texture => "texture",
            Self::Spread => "spread",
            Self::Temporal => "temporal",
        }
    }
}

/// One modifier value (`[[modifier]]` in modifiers.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Modifier {
    /// Unique lower-case value, e.g. "mild".
    pub name: Name,
    /// Modifier type.
    #[serde(rename = "type")]
    pub modifier_type: Spanned<ModifierType>,
    /// Other terms mapped onto this value.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub synonyms: Vec<Name>,
}

/// Certainty of an observation (paper D.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// Stated as fact.
    Certain,
    /// Probably so.
    Likely,
    /// Possibly so.
    Uncertain,
    /// Only mentioned in comparison with a prior.
    ComparisonOnly,
    /// A recommendation, not an observation.
    Recommendation,
}

impl Certainty {
    /// All values, in the order they are documented.
    pub const ALL: [Certainty; 5] = [
        Self::Certain,
        Self::Likely,
        Self::Uncertain,
        Self::ComparisonOnly,
        Self::Recommendation,
    ];

    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Certain => "certain",
            Self::Likely => "likely",
            Self::Uncertain => "uncertain",
            Self::ComparisonOnly => "comparison_only",
            Self::Recommendation => "recommendation",
        }
    }
}

/// Positiveness of an observation (paper D.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Positiveness {
    /// Present.
    Pos,
    /// Absent.
    Neg,
    /// Only mentioned in comparison with a prior.
    ComparisonOnly,
    /// A recommendation.
    Recommendation,
}

impl Positiveness {
    /// All values, in the order they are documented.
    pub const ALL: [Positiveness; 4] = [
        Self::Pos,
        Self::Neg,
        Self::ComparisonOnly,
        Self::Recommendation,
    ];

    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pos => "pos",
            Self::Neg => "neg",
            Self::ComparisonOnly => "comparison_only",
            Self::Recommendation => "recommendation",
        }
    }
}

/// One probability value (`[[probability]]` in modifiers.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probability {
    /// Unique lower-case value, e.g. "probable".
    pub name: Name,
    /// Certainty it implies.
    pub certainty: Spanned<Certainty>,
    /// Positiveness it implies.
    pub positiveness: Spanned<Positiveness>,
    /// Other terms mapped onto this value.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub synonyms: Vec<Name>,
}

/// Groups of change types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Something new.
    Appearance,
    /// Something gone.
    Disappearance,
    /// Getting worse.
    Worsening,
    /// Getting better.
    Improvement,
    /// No change.
    Stability,
    /// Larger or smaller, without judgement.
    SizeChange,
    /// A device was placed, moved, exchanged or removed.
    Device,
    /// A change without direction.
    Unspecified,
}

impl ChangeKind {
    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Appearance => "appearance",
            Self::Disappearance => "disappearance",
            Self::Worsening => "worsening",
            Self::Improvement => "improvement",
            Self::Stability => "stability",
            Self::SizeChange => "size_change",
            Self::Device => "device",
            Self::Unspecified => "unspecified",
        }
    }
}

/// One change type (`[[change]]` in changes.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// Unique lower-case value, e.g. "worsened".
    pub name: Name,
    /// Group.
    pub kind: Spanned<ChangeKind>,
    /// Other terms mapped onto this value.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub synonyms: Vec<Name>,
}

/// One CXAS class (`[[class]]` in sources/cxas_classes.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxasClass {
    /// Label id in the CXAS label mapping.
    pub id: u32,
    /// Verbatim CXAS class name.
    pub name: Name,
}

/// One Chest ImaGenome box name (`[[box]]` in sources/imagenome_boxes.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagenomeBox {
    /// Verbatim box name.
    pub name: Name,
}

/// regions.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsFile {
    /// Curator-maintained version string.
    pub version: Name,
    /// The regions, in file order.
    #[serde(default, rename = "region")]
    pub regions: Vec<Spanned<Region>>,
}

/// findings.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingsFile {
    /// Curator-maintained version string.
    pub version: Name,
    /// Allowed main categories.
    pub categories: Vec<Name>,
    /// Allowed subcategories.
    pub subcategories: Vec<Name>,
    /// The findings, in file order.
    #[serde(default, rename = "finding")]
    pub findings: Vec<Spanned<Finding>>,
}

/// modifiers.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModifiersFile {
    /// Curator-maintained version string.
    pub version: Name,
    /// Modifier values.
    #[serde(default, rename = "modifier")]
    pub modifiers: Vec<Spanned<Modifier>>,
    /// Probability values.
    #[serde(default, rename = "probability")]
    pub probabilities: Vec<Spanned<Probability>>,
}

/// changes.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangesFile {
    /// Curator-maintained version string.
    pub version: Name,
    /// Change types.
    #[serde(default, rename = "change")]
    pub changes: Vec<Spanned<Change>>,
}

/// sources/cxas_classes.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxasFile {
    /// CXAS package version the names were taken from.
    pub version: Name,
    /// Name of the CXAS label set.
    pub label_set: Name,
    /// The classes.
    #[serde(default, rename = "class")]
    pub classes: Vec<Spanned<CxasClass>>,
}

/// sources/imagenome_boxes.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagenomeFile {
    /// Chest ImaGenome version the names were taken from.
    pub version: Name,
    /// The boxes.
    #[serde(default, rename = "box")]
    pub boxes: Vec<Spanned<ImagenomeBox>>,
}

/// What a ConText trigger does (`category` in context.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerCategory {
    /// Negates the findings in its scope ("no", "free of", "are absent").
    Negated,
    /// Makes the findings in its scope uncertain ("may represent", "cannot be excluded").
    Uncertain,
    /// Puts the findings in its scope in a recommendation ("recommend", "follow-up").
    Hypothetical,
    /// Looks like a trigger but is none ("no change", "not only"): masks the shorter trigger.
    Pseudo,
    /// Ends every scope ("but", "however", "which").
    Terminate,
}

impl TriggerCategory {
    /// All values, in the order they are documented.
    pub const ALL: [TriggerCategory; 5] = [
        Self::Negated,
        Self::Uncertain,
        Self::Hypothetical,
        Self::Pseudo,
        Self::Terminate,
    ];

    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Negated => "negated",
            Self::Uncertain => "uncertain",
            Self::Hypothetical => "hypothetical",
            Self::Pseudo => "pseudo",
            Self::Terminate => "terminate",
        }
    }

    /// Whether triggers of this category modify findings (and so need a direction and a
    /// probability).
    pub fn modifies(self) -> bool {
        matches!(self, Self::Negated | Self::Uncertain | Self::Hypothetical)
    }
}

/// Which way a trigger's scope reaches (`direction` in context.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The findings after the trigger ("no effusion").
    Forward,
    /// The findings before it ("effusion is absent").
    Backward,
    /// Forward when a finding follows in its scope, else backward ("effusion, likely").
    Bidirectional,
}

impl Direction {
    /// All values, in the order they are documented.
    pub const ALL: [Direction; 3] = [Self::Forward, Self::Backward, Self::Bidirectional];

    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Backward => "backward",
            Self::Bidirectional => "bidirectional",
        }
    }
}

/// One ConText trigger (`[[trigger]]` in context.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// The words, lower case with single spaces, e.g. "no evidence of".
    pub text: Name,
    /// What it does.
    pub category: Spanned<TriggerCategory>,
    /// Where its scope reaches (negated, uncertain and hypothetical triggers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Spanned<Direction>>,
    /// The probability (modifiers.toml) it gives the findings in its scope (negated, uncertain
    /// and hypothetical triggers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<Name>,
    /// A change (changes.toml) it states as well, e.g. "resolved" for "has resolved".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Name>,
}

/// context.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// Curator-maintained version string.
    pub version: Name,
    /// The triggers, in file order.
    #[serde(default, rename = "trigger")]
    pub triggers: Vec<Spanned<Trigger>>,
}
