//! The validator: every problem in a refdefs directory as a [`Diagnostic`] with file and line.
//!
//! Checks, each with its own [`Code`]: unreadable files, TOML syntax, missing/unknown fields and
//! invalid values, duplicate names, the same synonym under two concepts, unknown references
//! (regions, findings, categories), cycles (region tree, localization dependencies, finding
//! parents), recipes naming unknown CXAS classes or Chest ImaGenome boxes, malformed recipes,
//! and left/right/bilateral links that disagree.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use crate::RefDefs;
use crate::hash::HashInput;
use crate::load::{FileKind, Sources, parse};
use crate::model::{
    Certainty, Laterality, Name, Operand, Positiveness, Recipe, Region, Spanned, TriggerCategory,
};

/// The class of a validation error; each has a failing-input test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// A file could not be read.
    Io,
    /// The file is not valid TOML.
    Syntax,
    /// A required field is absent.
    MissingField,
    /// A field that the format does not know (often a typo).
    UnknownField,
    /// A value outside its allowed set, or a name not in canonical lower case.
    InvalidValue,
    /// Two entries with the same name.
    DuplicateName,
    /// One term (name or synonym) under two concepts.
    DuplicateSynonym,
    /// A reference to a region, finding, category or subcategory that does not exist.
    UnknownReference,
    /// A cycle in the region tree, the localization dependencies or the finding parents.
    Cycle,
    /// A recipe names a class that CXAS does not segment.
    UnknownCxasClass,
    /// A recipe names a box that Chest ImaGenome does not provide.
    UnknownImagenomeBox,
    /// A localization recipe with missing, extra or unusable fields.
    Recipe,
    /// Left/right/bilateral links that disagree with each other or with laterality.
    LateralLink,
}

impl Code {
    /// The kebab-case code shown in diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Io => "io",
            Self::Syntax => "syntax",
            Self::MissingField => "missing-field",
            Self::UnknownField => "unknown-field",
            Self::InvalidValue => "invalid-value",
            Self::DuplicateName => "duplicate-name",
            Self::DuplicateSynonym => "duplicate-synonym",
            Self::UnknownReference => "unknown-reference",
            Self::Cycle => "cycle",
            Self::UnknownCxasClass => "unknown-cxas-class",
            Self::UnknownImagenomeBox => "unknown-imagenome-box",
            Self::Recipe => "recipe",
            Self::LateralLink => "lateral-link",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validation error, pointing to a file and 1-based line (0 when the file is unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as given (or `<embedded>/...`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// Error class.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: error[{}]: {} (hint: {})",
            self.file, self.line, self.code, self.message, self.hint
        )
    }
}

/// Checks the refdefs directory `dir`; an empty result means it is valid.
pub fn check(dir: &Path) -> Vec<Diagnostic> {
    match Sources::read_dir(dir) {
        Ok(sources) => check_sources(sources),
        Err(diagnostics) => diagnostics,
    }
}

/// Checks already read sources (e.g. [`Sources::embedded`]).
pub fn check_sources(sources: Sources) -> Vec<Diagnostic> {
    build(sources).1
}

/// Parses, hashes and validates; the definitions are returned when all files parsed.
pub(crate) fn build(sources: Sources) -> (Option<RefDefs>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    fn take<T>(result: Result<T, Diagnostic>, diagnostics: &mut Vec<Diagnostic>) -> Option<T> {
        result.map_err(|d| diagnostics.push(d)).ok()
    }
    let d = &mut diagnostics;
    let regions = take(parse(sources.file(FileKind::Regions)), d);
    let findings = take(parse(sources.file(FileKind::Findings)), d);
    let modifiers = take(parse(sources.file(FileKind::Modifiers)), d);
    let changes = take(parse(sources.file(FileKind::Changes)), d);
    let cxas = take(parse(sources.file(FileKind::CxasClasses)), d);
    let imagenome = take(parse(sources.file(FileKind::ImagenomeBoxes)), d);
    let context = take(parse(sources.file(FileKind::Context)), d);
    let (
        Some(regions),
        Some(findings),
        Some(modifiers),
        Some(changes),
        Some(cxas),
        Some(imagenome),
        Some(context),
    ) = (
        regions, findings, modifiers, changes, cxas, imagenome, context,
    )
    else {
        return (None, diagnostics);
    };
    let input = HashInput {
        regions: &regions,
        findings: &findings,
        modifiers: &modifiers,
        changes: &changes,
        cxas: &cxas,
        imagenome: &imagenome,
        context: &context,
    };
    let hashes = match input.hashes() {
        Ok(hashes) => hashes,
        Err(err) => {
            diagnostics.push(Diagnostic {
                file: sources.file(FileKind::Regions).display.clone(),
                line: 1,
                code: Code::InvalidValue,
                message: format!("cannot encode entries for hashing: {err}"),
                hint: "report this as a bug in cxrlake-refdefs".into(),
            });
            return (None, diagnostics);
        }
    };
    let defs = RefDefs {
        regions,
        findings,
        modifiers,
        changes,
        cxas,
        imagenome,
        context,
        sources,
        hashes,
    };
    diagnostics.extend(Validator::new(&defs).run());
    (Some(defs), diagnostics)
}

/// Lower case, trimmed, single spaces: the form terms are compared in.
pub fn normalize(term: &str) -> String {
    term.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Names of one kind of entry, with their synonyms, for lookups and hints.
struct Index<'a> {
    what: &'static str,
    file: FileKind,
    names: HashMap<&'a str, Range<usize>>,
    synonyms: HashMap<String, &'a str>,
}

impl<'a> Index<'a> {
    fn new(what: &'static str, file: FileKind) -> Self {
        Index {
            what,
            file,
            names: HashMap::new(),
            synonyms: HashMap::new(),
        }
    }

    fn add(&mut self, name: &'a Name, synonyms: &'a [Name]) {
        self.names
            .entry(name.get_ref())
            .or_insert_with(|| name.span());
        for s in synonyms {
            self.synonyms
                .entry(normalize(s.get_ref()))
                .or_insert(name.get_ref());
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    fn hint(&self, unknown: &str) -> String {
        if let Some(owner) = self.synonyms.get(&normalize(unknown)) {
            return format!(
                "'{unknown}' is a synonym of {} '{owner}'; reference the name",
                self.what
            );
        }
        match closest(unknown, self.names.keys().copied()) {
            Some(best) => format!("did you mean '{best}'?"),
            None => format!(
                "add a {} named '{unknown}' to {} or fix the reference",
                self.what,
                self.file.path()
            ),
        }
    }
}

/// The most similar candidate within a small edit distance, if any.
fn closest<'a>(target: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (target.chars().count() / 3).clamp(1, 4);
    candidates
        .map(|c| (edit_distance(target, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// One outgoing edge of a graph node: target and the span of the reference.
type Edge<'a> = (&'a str, Range<usize>);

struct Validator<'a> {
    defs: &'a RefDefs,
    out: Vec<Diagnostic>,
}

impl<'a> Validator<'a> {
    fn new(defs: &'a RefDefs) -> Self {
        Validator {
            defs,
            out: Vec::new(),
        }
    }

    fn report(
        &mut self,
        file: FileKind,
        span: Range<usize>,
        code: Code,
        message: String,
        hint: String,
    ) {
        let source = self.defs.sources.file(file);
        self.out.push(Diagnostic {
            file: source.display.clone(),
            line: source.line_of(span.start),
            code,
            message,
            hint,
        });
    }

    fn location(&self, file: FileKind, span: &Range<usize>) -> String {
        let source = self.defs.sources.file(file);
        format!("{}:{}", source.display, source.line_of(span.start))
    }

    fn run(mut self) -> Vec<Diagnostic> {
        let defs = self.defs;
        let regions: Vec<&Region> = defs.regions.regions.iter().map(Spanned::get_ref).collect();
        let mut region_index = Index::new("region", FileKind::Regions);
        for r in &regions {
            region_index.add(&r.name, &r.synonyms);
        }
        let mut finding_index = Index::new("finding", FileKind::Findings);
        for f in &defs.findings.findings {
            finding_index.add(&f.get_ref().name, &f.get_ref().synonyms);
        }

        self.check_terms(
            FileKind::Regions,
            regions.iter().map(|r| (&r.name, r.synonyms.as_slice())),
        );
        self.check_terms(
            FileKind::Findings,
            defs.findings
                .findings
                .iter()
                .map(|f| (&f.get_ref().name, f.get_ref().synonyms.as_slice())),
        );
        self.check_terms(
            FileKind::Modifiers,
            defs.modifiers
                .modifiers
                .iter()
                .map(|m| (&m.get_ref().name, m.get_ref().synonyms.as_slice()))
                .chain(
                    defs.modifiers
                        .probabilities
                        .iter()
                        .map(|p| (&p.get_ref().name, p.get_ref().synonyms.as_slice())),
                ),
        );
        self.check_terms(
            FileKind::Changes,
            defs.changes
                .changes
                .iter()
                .map(|c| (&c.get_ref().name, c.get_ref().synonyms.as_slice())),
        );
        self.check_source_names();
        self.check_regions(&regions, &region_index);
        self.check_findings(&region_index, &finding_index);
        self.check_triggers();
        self.out
    }

    /// Style, duplicate names and synonyms claimed by two concepts, within one file.
    fn check_terms<'b>(
        &mut self,
        file: FileKind,
        entries: impl Iterator<Item = (&'b Name, &'b [Name])>,
    ) {
        let mut names: HashMap<String, Range<usize>> = HashMap::new();
        let mut terms: HashMap<String, (String, Range<usize>)> = HashMap::new();
        for (name, synonyms) in entries {
            let owner = name.get_ref();
            for (i, term) in std::iter::once(name).chain(synonyms).enumerate() {
                let key = normalize(term.get_ref());
                if key.is_empty() || key != *term.get_ref() {
                    self.report(
                        file,
                        term.span(),
                        Code::InvalidValue,
                        format!("term '{}' is not in canonical form", term.get_ref()),
                        format!("write it lower case with single spaces: '{key}'"),
                    );
                    continue;
                }
                if i == 0 {
                    if let Some(first) = names.get(&key) {
                        let at = self.location(file, first);
                        self.report(
                            file,
                            term.span(),
                            Code::DuplicateName,
                            format!("'{owner}' is defined twice"),
                            format!("first defined at {at}; merge the two entries or rename one"),
                        );
                        continue;
                    }
                    names.insert(key.clone(), term.span());
                }
                match terms.get(&key) {
                    Some((other, _)) if other == owner => {}
                    Some((other, first)) => {
                        let at = self.location(file, first);
                        let other = other.clone();
                        self.report(
                            file,
                            term.span(),
                            Code::DuplicateSynonym,
                            format!("'{key}' is used for both '{other}' and '{owner}'"),
                            format!(
                                "already used by '{other}' at {at}; keep the term under one concept"
                            ),
                        );
                    }
                    None => {
                        terms.insert(key, (owner.clone(), term.span()));
                    }
                }
            }
        }
    }

    fn check_source_names(&mut self) {
        let defs = self.defs;
        let mut seen: HashMap<&str, Range<usize>> = HashMap::new();
        let mut ids: HashMap<u32, Range<usize>> = HashMap::new();
        for class in &defs.cxas.classes {
            let class_ref = class.get_ref();
            if let Some(first) = seen.get(class_ref.name.get_ref().as_str()).cloned() {
                let at = self.location(FileKind::CxasClasses, &first);
                self.report(
                    FileKind::CxasClasses,
                    class_ref.name.span(),
                    Code::DuplicateName,
                    format!("CXAS class '{}' is listed twice", class_ref.name.get_ref()),
                    format!("first listed at {at}; keep one entry"),
                );
            } else {
                seen.insert(class_ref.name.get_ref(), class_ref.name.span());
            }
            if let Some(first) = ids.get(&class_ref.id).cloned() {
                let at = self.location(FileKind::CxasClasses, &first);
                self.report(
                    FileKind::CxasClasses,
                    class.span(),
                    Code::DuplicateName,
                    format!("CXAS class id {} is used twice", class_ref.id),
                    format!("first used at {at}; ids must match the CXAS label mapping"),
                );
            } else {
                ids.insert(class_ref.id, class.span());
            }
        }
        let mut boxes: HashMap<&str, Range<usize>> = HashMap::new();
        for b in &defs.imagenome.boxes {
            let name = &b.get_ref().name;
            if let Some(first) = boxes.get(name.get_ref().as_str()).cloned() {
                let at = self.location(FileKind::ImagenomeBoxes, &first);
                self.report(
                    FileKind::ImagenomeBoxes,
                    name.span(),
                    Code::DuplicateName,
                    format!("Chest ImaGenome box '{}' is listed twice", name.get_ref()),
                    format!("first listed at {at}; keep one entry"),
                );
            } else {
                boxes.insert(name.get_ref(), name.span());
            }
        }
    }

    fn reference(&mut self, file: FileKind, name: &Name, index: &Index<'_>, field: &str) -> bool {
        if index.contains(name.get_ref()) {
            return true;
        }
        let hint = index.hint(name.get_ref());
        self.report(
            file,
            name.span(),
            Code::UnknownReference,
            format!(
                "`{field}` names unknown {} '{}'",
                index.what,
                name.get_ref()
            ),
            hint,
        );
        false
    }

    fn check_regions(&mut self, regions: &[&'a Region], index: &Index<'a>) {
        let by_name: HashMap<&'a str, &'a Region> = regions
            .iter()
            .map(|r| (r.name.get_ref().as_str(), *r))
            .collect();
        let file = FileKind::Regions;
        let mut tree: HashMap<&str, Vec<Edge<'a>>> = HashMap::new();
        let mut recipe_deps: HashMap<&str, Vec<Edge<'a>>> = HashMap::new();
        for region in regions {
            let name = region.name.get_ref().as_str();
            let mut parent_edges = Vec::new();
            if let Some(parent) = &region.parent
                && self.reference(file, parent, index, "parent")
            {
                parent_edges.push((parent.get_ref().as_str(), parent.span()));
            }
            tree.insert(name, parent_edges);
            for fallback in &region.fallbacks {
                if self.reference(file, fallback, index, "fallbacks") && fallback.get_ref() == name
                {
                    self.report(
                        file,
                        fallback.span(),
                        Code::UnknownReference,
                        format!("region '{name}' lists itself as a fallback"),
                        "fallbacks name coarser regions, e.g. the parent".into(),
                    );
                }
            }
            self.check_lateral_links(region, &by_name, index);
            recipe_deps.insert(name, self.check_recipe(region, &by_name, index));
        }
        let order: Vec<&str> = regions.iter().map(|r| r.name.get_ref().as_str()).collect();
        self.report_cycles(file, &order, &tree, "region tree (`parent`)");
        self.report_cycles(file, &order, &recipe_deps, "region localization recipes");
    }

    fn check_lateral_links(
        &mut self,
        region: &Region,
        by_name: &HashMap<&str, &Region>,
        index: &Index<'_>,
    ) {
        let file = FileKind::Regions;
        let name = region.name.get_ref();
        let lat = *region.laterality.get_ref();
        for side in [Laterality::Left, Laterality::Right, Laterality::Bilateral] {
            let Some(link) = region.link(side) else {
                continue;
            };
            let field = side.as_str();
            if lat == Laterality::Unknown {
                self.report(
                    file,
                    link.span(),
                    Code::LateralLink,
                    format!("region '{name}' has laterality `unknown` but a `{field}` link"),
                    "set `laterality` to left, right or bilateral, or remove the link".into(),
                );
                continue;
            }
            if side == lat {
                self.report(
                    file,
                    link.span(),
                    Code::LateralLink,
                    format!(
                        "{} region '{name}' cannot have a `{field}` link",
                        lat.as_str()
                    ),
                    format!("`{field}` names the {field} counterpart of a region of another side"),
                );
                continue;
            }
            if !self.reference(file, link, index, field) {
                continue;
            }
            let Some(other) = by_name.get(link.get_ref().as_str()) else {
                continue;
            };
            let other_lat = *other.laterality.get_ref();
            if other_lat != side {
                let at = self.location(file, &other.name.span());
                self.report(file, link.span(), Code::LateralLink,
                    format!("`{field}` of '{name}' names '{}', whose laterality is {}", other.name.get_ref(), other_lat.as_str()),
                    format!("point `{field}` at a {field} region, or fix the laterality of '{}' at {at}", other.name.get_ref()));
                continue;
            }
            let back = other.link(lat).map(|n| n.get_ref().as_str());
            if back != Some(name.as_str()) {
                let at = self.location(file, &other.name.span());
                self.report(
                    file,
                    link.span(),
                    Code::LateralLink,
                    format!(
                        "'{}' does not link back to '{name}': its `{}` is {}",
                        other.name.get_ref(),
                        lat.as_str(),
                        back.map_or_else(|| "missing".to_string(), |b| format!("'{b}'"))
                    ),
                    format!(
                        "set `{} = \"{name}\"` in '{}' at {at}",
                        lat.as_str(),
                        other.name.get_ref()
                    ),
                );
            }
        }
    }

    /// Validates a region's recipe and returns its region dependencies as graph edges.
    fn check_recipe(
        &mut self,
        region: &'a Region,
        by_name: &HashMap<&'a str, &'a Region>,
        index: &Index<'_>,
    ) -> Vec<Edge<'a>> {
        let file = FileKind::Regions;
        let localization = region.localization.get_ref();
        let recipe = match localization.recipe() {
            Ok(recipe) => recipe,
            Err(problem) => {
                self.report(
                    file,
                    problem.span,
                    Code::Recipe,
                    problem.message,
                    problem.hint,
                );
                return Vec::new();
            }
        };
        let mut deps: Vec<&'a Name> = Vec::new();
        match &recipe {
            Recipe::Cxas { .. } => {
                for class in &localization.classes {
                    self.cxas_class(class.get_ref(), class.span());
                }
            }
            Recipe::Imagenome { .. } => {
                for b in &localization.boxes {
                    self.imagenome_box(b.get_ref(), b.span());
                }
            }
            Recipe::Bilateral { .. } => {
                for (side, name) in [
                    (Laterality::Left, &localization.left),
                    (Laterality::Right, &localization.right),
                ] {
                    let Some(name) = name else { continue };
                    if !self.reference(file, name, index, side.as_str()) {
                        continue;
                    }
                    deps.push(name);
                    if let Some(other) = by_name.get(name.get_ref().as_str())
                        && *other.laterality.get_ref() != side
                    {
                        self.report(
                            file,
                            name.span(),
                            Code::LateralLink,
                            format!(
                                "bilateral recipe uses '{}' as {} side, but its laterality is {}",
                                name.get_ref(),
                                side.as_str(),
                                other.laterality.get_ref().as_str()
                            ),
                            format!("`{}` must name a {} region", side.as_str(), side.as_str()),
                        );
                    }
                }
            }
            Recipe::SuperBox { .. } => {
                for child in &localization.children {
                    if self.reference(file, child, index, "children") {
                        deps.push(child);
                    }
                }
            }
            Recipe::Intersection { of, .. } | Recipe::Union { of, .. } => {
                for (operand, written) in of.iter().zip(&localization.of) {
                    match operand {
                        Operand::Cxas(class) => self.cxas_class(class, written.span()),
                        Operand::Imagenome(name) => self.imagenome_box(name, written.span()),
                        Operand::Region(name) => {
                            if index.contains(name) {
                                deps.push(written);
                            } else {
                                let hint = index.hint(name);
                                self.report(
                                    file,
                                    written.span(),
                                    Code::UnknownReference,
                                    format!("operand names unknown region '{name}'"),
                                    hint,
                                );
                            }
                        }
                    }
                }
            }
            Recipe::None => {}
        }
        let mut edges = Vec::with_capacity(deps.len());
        for dep in deps {
            let target = dep
                .get_ref()
                .strip_prefix("region:")
                .unwrap_or(dep.get_ref())
                .to_string();
            let Some(other) = by_name.get(target.as_str()) else {
                continue;
            };
            if !other.is_localized() {
                self.report(
                    file,
                    dep.span(),
                    Code::Recipe,
                    format!(
                        "recipe of '{}' uses region '{target}', which is not localized",
                        region.name.get_ref()
                    ),
                    format!("use a localized region, or give '{target}' a recipe"),
                );
            }
            edges.push((other.name.get_ref().as_str(), dep.span()));
        }
        edges
    }

    fn cxas_class(&mut self, class: &str, span: Range<usize>) {
        let defs = self.defs;
        let names = defs
            .cxas
            .classes
            .iter()
            .map(|c| c.get_ref().name.get_ref().as_str());
        if names.clone().any(|n| n == class) {
            return;
        }
        let hint = match closest(class, names) {
            Some(best) => format!(
                "did you mean '{best}'? CXAS class names are listed verbatim in {}",
                FileKind::CxasClasses.path()
            ),
            None => format!("use a class name from {}", FileKind::CxasClasses.path()),
        };
        self.report(
            FileKind::Regions,
            span,
            Code::UnknownCxasClass,
            format!("unknown CXAS class '{class}'"),
            hint,
        );
    }

    fn imagenome_box(&mut self, name: &str, span: Range<usize>) {
        let defs = self.defs;
        let names = defs
            .imagenome
            .boxes
            .iter()
            .map(|b| b.get_ref().name.get_ref().as_str());
        if names.clone().any(|n| n == name) {
            return;
        }
        let hint = match closest(name, names) {
            Some(best) => format!(
                "did you mean '{best}'? box names are listed in {}",
                FileKind::ImagenomeBoxes.path()
            ),
            None => format!("use a box name from {}", FileKind::ImagenomeBoxes.path()),
        };
        self.report(
            FileKind::Regions,
            span,
            Code::UnknownImagenomeBox,
            format!("unknown Chest ImaGenome box '{name}'"),
            hint,
        );
    }

    fn check_findings(&mut self, regions: &Index<'_>, findings: &Index<'a>) {
        let defs = self.defs;
        let file = FileKind::Findings;
        let mut categories: HashMap<&str, Range<usize>> = HashMap::new();
        let mut subcategories: HashMap<&str, Range<usize>> = HashMap::new();
        for (list, seen, field) in [
            (&defs.findings.categories, &mut categories, "categories"),
            (
                &defs.findings.subcategories,
                &mut subcategories,
                "subcategories",
            ),
        ] {
            for value in list {
                let text = value.get_ref().as_str();
                if text.is_empty()
                    || !text
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                {
                    self.report(
                        file,
                        value.span(),
                        Code::InvalidValue,
                        format!("{field} value '{text}' is not UPPER_SNAKE_CASE"),
                        format!(
                            "write it as '{}'",
                            text.to_uppercase().replace([' ', '-'], "_")
                        ),
                    );
                }
                if let Some(first) = seen.get(text).cloned() {
                    let at = self.location(file, &first);
                    self.report(
                        file,
                        value.span(),
                        Code::DuplicateName,
                        format!("{field} value '{text}' is declared twice"),
                        format!("first declared at {at}; keep one"),
                    );
                } else {
                    seen.insert(text, value.span());
                }
            }
        }
        let mut parents: HashMap<&str, Vec<Edge<'a>>> = HashMap::new();
        let mut order = Vec::new();
        for finding in &defs.findings.findings {
            let f = finding.get_ref();
            let name = f.name.get_ref().as_str();
            order.push(name);
            if !categories.contains_key(f.category.get_ref().as_str()) {
                self.report(
                    file,
                    f.category.span(),
                    Code::UnknownReference,
                    format!(
                        "finding '{name}' has unknown category '{}'",
                        f.category.get_ref()
                    ),
                    format!(
                        "use one of {} or declare it in `categories`",
                        join_keys(&categories)
                    ),
                );
            }
            if f.subcategories.is_empty() {
                self.report(
                    file,
                    finding.span(),
                    Code::InvalidValue,
                    format!("finding '{name}' has no subcategory"),
                    "give at least one subcategory, e.g. subcategories = [\"LUNG_FIELD\"]".into(),
                );
            }
            for sub in &f.subcategories {
                if !subcategories.contains_key(sub.get_ref().as_str()) {
                    let hint = match closest(sub.get_ref(), subcategories.keys().copied()) {
                        Some(best) => {
                            format!("did you mean '{best}'? or declare it in `subcategories`")
                        }
                        None => {
                            "declare it in the `subcategories` list at the top of the file".into()
                        }
                    };
                    self.report(
                        file,
                        sub.span(),
                        Code::UnknownReference,
                        format!(
                            "finding '{name}' has unknown subcategory '{}'",
                            sub.get_ref()
                        ),
                        hint,
                    );
                }
            }
            let mut edges = Vec::new();
            for parent in &f.parents {
                if self.reference(file, parent, findings, "parents") {
                    edges.push((parent.get_ref().as_str(), parent.span()));
                }
            }
            parents.insert(name, edges);
            for target in &f.indicative_of {
                self.reference(file, target, findings, "indicative_of");
            }
            for region in &f.default_regions {
                self.reference(file, region, regions, "default_regions");
            }
        }
        self.report_cycles(file, &order, &parents, "finding hierarchy (`parents`)");
    }

    /// ConText triggers: canonical, unique texts; a direction and a fitting probability exactly
    /// for the categories that modify findings; probabilities and changes that exist.
    fn check_triggers(&mut self) {
        let defs = self.defs;
        let file = FileKind::Context;
        let mut seen: HashMap<&str, Range<usize>> = HashMap::new();
        for trigger in &defs.context.triggers {
            let t = trigger.get_ref();
            let text = t.text.get_ref().as_str();
            let key = normalize(text);
            if key.is_empty() || key != text {
                self.report(
                    file,
                    t.text.span(),
                    Code::InvalidValue,
                    format!("trigger '{text}' is not in canonical form"),
                    format!("write it lower case with single spaces: '{key}'"),
                );
            } else if let Some(first) = seen.get(text).cloned() {
                let at = self.location(file, &first);
                self.report(
                    file,
                    t.text.span(),
                    Code::DuplicateName,
                    format!("trigger '{text}' is defined twice"),
                    format!("first defined at {at}; keep one entry"),
                );
            } else {
                seen.insert(text, t.text.span());
            }
            let category = *t.category.get_ref();
            if category.modifies() {
                if t.direction.is_none() {
                    self.report(
                        file,
                        trigger.span(),
                        Code::MissingField,
                        format!("{} trigger '{text}' has no `direction`", category.as_str()),
                        "add direction = \"forward\", \"backward\" or \"bidirectional\"".into(),
                    );
                }
                match &t.probability {
                    Some(probability) => self.trigger_probability(text, category, probability),
                    None => self.report(
                        file,
                        trigger.span(),
                        Code::MissingField,
                        format!("{} trigger '{text}' has no `probability`", category.as_str()),
                        "add the probability of modifiers.toml it gives, e.g. probability = \"negative\"".into(),
                    ),
                }
            } else {
                let extra = [
                    ("direction", t.direction.as_ref().map(Spanned::span)),
                    ("probability", t.probability.as_ref().map(Spanned::span)),
                ];
                for (field, span) in extra {
                    if let Some(span) = span {
                        self.report(
                            file,
                            span,
                            Code::InvalidValue,
                            format!("{} trigger '{text}' takes no `{field}`", category.as_str()),
                            format!(
                                "remove `{field}`: {} triggers modify no finding",
                                category.as_str()
                            ),
                        );
                    }
                }
            }
            if let Some(change) = &t.change {
                let names = defs
                    .changes
                    .changes
                    .iter()
                    .map(|c| c.get_ref().name.get_ref().as_str());
                if category == TriggerCategory::Terminate {
                    self.report(
                        file,
                        change.span(),
                        Code::InvalidValue,
                        format!("terminate trigger '{text}' takes no `change`"),
                        "remove `change`, or make the trigger pseudo".into(),
                    );
                } else if !names.clone().any(|n| n == change.get_ref()) {
                    let hint = match closest(change.get_ref(), names) {
                        Some(best) => format!("did you mean '{best}'?"),
                        None => format!("use a change name of {}", FileKind::Changes.path()),
                    };
                    self.report(
                        file,
                        change.span(),
                        Code::UnknownReference,
                        format!(
                            "trigger '{text}' names unknown change '{}'",
                            change.get_ref()
                        ),
                        hint,
                    );
                }
            }
        }
    }

    /// A trigger's probability exists and fits its category (negated: positiveness neg;
    /// uncertain: pos, likely or uncertain; hypothetical: a recommendation).
    fn trigger_probability(&mut self, text: &str, category: TriggerCategory, probability: &Name) {
        let defs = self.defs;
        let file = FileKind::Context;
        let Some(found) = defs
            .modifiers
            .probabilities
            .iter()
            .map(Spanned::get_ref)
            .find(|p| p.name.get_ref() == probability.get_ref())
        else {
            let names = defs
                .modifiers
                .probabilities
                .iter()
                .map(|p| p.get_ref().name.get_ref().as_str());
            let hint = match closest(probability.get_ref(), names.clone()) {
                Some(best) => format!("did you mean '{best}'?"),
                None => format!("use one of {}", names.collect::<Vec<_>>().join(", ")),
            };
            self.report(
                file,
                probability.span(),
                Code::UnknownReference,
                format!(
                    "trigger '{text}' names unknown probability '{}'",
                    probability.get_ref()
                ),
                hint,
            );
            return;
        };
        let positiveness = *found.positiveness.get_ref();
        let certainty = *found.certainty.get_ref();
        let fits = match category {
            TriggerCategory::Negated => positiveness == Positiveness::Neg,
            TriggerCategory::Uncertain => {
                positiveness == Positiveness::Pos
                    && matches!(certainty, Certainty::Likely | Certainty::Uncertain)
            }
            TriggerCategory::Hypothetical => certainty == Certainty::Recommendation,
            TriggerCategory::Pseudo | TriggerCategory::Terminate => true,
        };
        if !fits {
            self.report(
                file,
                probability.span(),
                Code::InvalidValue,
                format!(
                    "{} trigger '{text}' gives probability '{}' ({} {})",
                    category.as_str(),
                    probability.get_ref(),
                    positiveness.as_str(),
                    certainty.as_str()
                ),
                match category {
                    TriggerCategory::Negated => "a negated trigger gives a probability with positiveness neg".into(),
                    TriggerCategory::Uncertain => "an uncertain trigger gives a positive probability of certainty likely or uncertain".into(),
                    _ => "a hypothetical trigger gives a probability of certainty recommendation".into(),
                },
            );
        }
    }

    fn report_cycles(
        &mut self,
        file: FileKind,
        order: &[&'a str],
        edges: &HashMap<&'a str, Vec<Edge<'a>>>,
        graph: &str,
    ) {
        let position: HashMap<&str, usize> =
            order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        for cycle in find_cycles(order, edges) {
            // Report at the outgoing reference of the cycle member defined first in the file.
            let Some(start) = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, (from, _, _))| position.get(from).copied().unwrap_or(usize::MAX))
                .map(|(i, _)| i)
            else {
                continue;
            };
            let mut path: Vec<&str> = cycle[start..]
                .iter()
                .chain(&cycle[..start])
                .map(|(from, _, _)| *from)
                .collect();
            path.push(cycle[start].0);
            let span = cycle[start].2.clone();
            self.report(
                file,
                span,
                Code::Cycle,
                format!("cycle in the {graph}: {}", path.join(" -> ")),
                "break the cycle by pointing one of these references at a coarser entry".into(),
            );
        }
    }
}

fn join_keys(map: &HashMap<&str, Range<usize>>) -> String {
    let mut keys: Vec<&str> = map.keys().copied().collect();
    keys.sort_unstable();
    keys.join(", ")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    Active,
    Done,
}

/// All cycles reachable in DFS order, each as its edges `(from, to, span)`.
fn find_cycles<'a>(
    order: &[&'a str],
    edges: &HashMap<&'a str, Vec<Edge<'a>>>,
) -> Vec<Vec<(&'a str, &'a str, Range<usize>)>> {
    struct Search<'a, 'e> {
        edges: &'e HashMap<&'a str, Vec<Edge<'a>>>,
        state: HashMap<&'a str, Visit>,
        path: Vec<(&'a str, &'a str, Range<usize>)>,
        cycles: Vec<Vec<(&'a str, &'a str, Range<usize>)>>,
    }
    impl<'a> Search<'a, '_> {
        fn visit(&mut self, node: &'a str) {
            self.state.insert(node, Visit::Active);
            for (to, span) in self.edges.get(node).into_iter().flatten() {
                match self.state.get(to) {
                    Some(Visit::Done) => {}
                    Some(Visit::Active) => {
                        let start = self
                            .path
                            .iter()
                            .position(|(from, _, _)| from == to)
                            .unwrap_or(self.path.len());
                        let mut cycle = self.path[start..].to_vec();
                        cycle.push((node, to, span.clone()));
                        self.cycles.push(cycle);
                    }
                    None => {
                        self.path.push((node, to, span.clone()));
                        self.visit(to);
                        self.path.pop();
                    }
                }
            }
            self.state.insert(node, Visit::Done);
        }
    }
    let mut search = Search {
        edges,
        state: HashMap::new(),
        path: Vec::new(),
        cycles: Vec::new(),
    };
    for node in order {
        if !search.state.contains_key(node) {
            search.visit(node);
        }
    }
    search.cycles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("left lung", "left lung"), 0);
        assert_eq!(edit_distance("left lnug", "left lung"), 2);
        assert_eq!(edit_distance("heart", "hearts"), 1);
    }

    #[test]
    fn closest_respects_the_limit() {
        let names = ["left lung", "right lung", "heart"];
        assert_eq!(
            closest("left lunq", names.iter().copied()),
            Some("left lung")
        );
        assert_eq!(closest("abdomen", names.iter().copied()), None);
    }

    #[test]
    fn find_cycles_reports_each_cycle_once() {
        let mut edges: HashMap<&str, Vec<Edge<'_>>> = HashMap::new();
        edges.insert("a", vec![("b", 0..1)]);
        edges.insert("b", vec![("c", 1..2)]);
        edges.insert("c", vec![("a", 2..3)]);
        edges.insert("d", vec![("a", 3..4)]);
        let cycles = find_cycles(&["d", "a", "b", "c"], &edges);
        assert_eq!(cycles.len(), 1);
        let members: Vec<&str> = cycles[0].iter().map(|(from, _, _)| *from).collect();
        assert_eq!(members, ["a", "b", "c"]);
    }

    #[test]
    fn diagnostic_display_has_file_line_code_and_hint() {
        let d = Diagnostic {
            file: "refdefs/regions.toml".into(),
            line: 12,
            code: Code::Cycle,
            message: "cycle".into(),
            hint: "break it".into(),
        };
        assert_eq!(
            d.to_string(),
            "refdefs/regions.toml:12: error[cycle]: cycle (hint: break it)"
        );
    }
}
