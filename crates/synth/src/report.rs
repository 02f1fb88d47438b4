//! MIMIC-style free-text reports, written together with their ground truth.
//!
//! ```text
//!  plan findings (normal? devices, findings with region/side/severity/change/hedge)
//!        │
//!        ├─► FINDINGS sentences   (devices, positives, combined positives, negations, normals)
//!        ├─► IMPRESSION lines     (numbered when several; normal studies get a normal line)
//!        └─► FindingTruth per statement (same sentence text as in the report)
//!  sections: optional WET READ, FINAL REPORT header, EXAMINATION / INDICATION (or HISTORY,
//!  REASON FOR EXAM) / TECHNIQUE / COMPARISON / FINDINGS / IMPRESSION (or CONCLUSION), some
//!  missing; text wrapped at 76 columns with a one-space indent, `___` for de-identified text.
//! ```

use rand::Rng;
use rand::seq::IndexedRandom;

use crate::truth::{FindingTruth, Positiveness};
use crate::vocab::{
    self, CHANGES, Certainty, ChangeForm, DEVICES, FINDINGS, FindingDef, FindingStyle, HEDGES,
    HedgeForm, Laterality, NORMAL_IMPRESSIONS, NORMAL_SENTENCES, SEVERITIES, SeverityScale,
};

/// What the report generator needs to know about the study.
#[derive(Debug, Clone, Copy)]
pub struct ReportContext {
    /// Exam line, e.g. `CHEST (PA AND LAT)`.
    pub exam: &'static str,
    /// Portable (AP, often ICU) study: more devices and fewer normal studies.
    pub portable: bool,
    /// Whether a prior study exists to compare with.
    pub has_prior: bool,
}

/// A generated report with what it states.
#[derive(Debug, Clone)]
pub struct Report {
    /// Full report text as stored in `sXXXXXXXX.txt`.
    pub text: String,
    /// Statements in FINDINGS and IMPRESSION.
    pub findings: Vec<FindingTruth>,
    /// Indication text, if the report has such a section.
    pub indication: Option<String>,
    /// No abnormal finding (devices allowed).
    pub normal: bool,
    /// Cardiomegaly severity, used by the image geometry (0 = normal heart).
    pub heart_enlargement: u8,
}

/// A positive finding chosen for the study, before it is written.
#[derive(Debug, Clone)]
struct Planned {
    def: &'static FindingDef,
    regions: Vec<&'static str>,
    laterality: Option<Laterality>,
    severity: Option<(&'static str, &'static str)>,
    change: Option<(&'static str, &'static str, ChangeForm)>,
    hedge: Option<(&'static str, Certainty, HedgeForm)>,
}

/// A sentence and its statements.
#[derive(Debug, Default)]
struct Sentence {
    text: String,
    statements: Vec<Statement>,
}

#[derive(Debug)]
struct Statement {
    finding: &'static str,
    positiveness: Positiveness,
    certainty: Certainty,
    regions: Vec<String>,
    laterality: Option<Laterality>,
    severity: Option<&'static str>,
    change: Option<&'static str>,
}

/// Generates one report.
pub fn generate_report<R: Rng>(rng: &mut R, ctx: &ReportContext) -> Report {
    let normal = rng.random_bool(if ctx.portable { 0.22 } else { 0.55 });
    let planned = if normal {
        Vec::new()
    } else {
        plan_findings(rng, ctx)
    };
    let devices = plan_devices(rng, ctx);

    let mut findings_section: Vec<Sentence> = Vec::new();
    for (device, template) in &devices {
        findings_section.push(device_sentence(rng, device, template, ctx.has_prior));
    }
    let mut i = 0;
    while i < planned.len() {
        let combinable = |p: &Planned| {
            p.hedge.is_none()
                && p.change.is_none_or(|c| c.2 == ChangeForm::Prefix)
                && matches!(
                    p.def.style,
                    FindingStyle::Pleural | FindingStyle::Parenchymal
                )
        };
        if i + 1 < planned.len()
            && combinable(&planned[i])
            && combinable(&planned[i + 1])
            && rng.random_bool(0.4)
        {
            findings_section.push(combined_sentence(rng, &planned[i], &planned[i + 1]));
            i += 2;
        } else {
            findings_section.push(positive_sentence(rng, &planned[i]));
            i += 1;
        }
    }
    findings_section.extend(negative_sentences(rng, &planned));
    findings_section.extend(normal_sentences(rng, &planned));

    let mut impression: Vec<Sentence> = Vec::new();
    if planned.is_empty() {
        impression.push(Sentence {
            text: NORMAL_IMPRESSIONS
                .choose(rng)
                .copied()
                .unwrap_or("No acute process.")
                .to_owned(),
            statements: Vec::new(),
        });
    } else {
        let take = planned.len().min(rng.random_range(1..=3));
        for p in &planned[..take] {
            impression.push(positive_sentence(rng, p));
        }
    }
    if let Some((device, template)) = devices.first()
        && rng.random_bool(0.3)
    {
        impression.push(device_sentence(rng, device, template, ctx.has_prior));
    }

    let indication = rng
        .random_bool(0.94)
        .then(|| pick_indication(rng, &planned, &devices));
    let heart_enlargement = planned
        .iter()
        .find(|p| p.def.canonical == "cardiomegaly")
        .map_or(0, |p| match p.severity.map(|s| s.1) {
            Some("severe") => 3,
            Some("moderate") => 2,
            _ => 1,
        });
    let (text, findings) = assemble(
        rng,
        ctx,
        indication.as_deref(),
        findings_section,
        impression,
    );
    Report {
        text,
        findings,
        indication,
        normal: planned.is_empty(),
        heart_enlargement,
    }
}

fn plan_findings<R: Rng>(rng: &mut R, ctx: &ReportContext) -> Vec<Planned> {
    let boost = if ctx.portable { 1.25 } else { 0.8 };
    let mut chosen: Vec<&'static FindingDef> = FINDINGS
        .iter()
        .filter(|f| rng.random_bool((f.prevalence * boost).min(0.95)))
        .collect();
    if chosen.is_empty() {
        let weights: f64 = FINDINGS.iter().map(|f| f.prevalence).sum();
        let mut target = rng.random::<f64>() * weights;
        for f in FINDINGS {
            target -= f.prevalence;
            if target <= 0.0 {
                chosen.push(f);
                break;
            }
        }
        if chosen.is_empty() {
            chosen.push(&FINDINGS[0]);
        }
    }
    chosen.truncate(4);
    chosen
        .into_iter()
        .map(|def| plan_one(rng, def, ctx.has_prior))
        .collect()
}

fn plan_one<R: Rng>(rng: &mut R, def: &'static FindingDef, has_prior: bool) -> Planned {
    let regions: Vec<&'static str> = def
        .regions
        .choose(rng)
        .map(|set| set.to_vec())
        .unwrap_or_default();
    let laterality = laterality_of(&regions);
    let severity = match def.severity {
        SeverityScale::None => None,
        scale => rng.random_bool(0.7).then(|| {
            let options: Vec<_> = SEVERITIES.iter().filter(|s| s.2 == scale).collect();
            options.choose(rng).map(|s| (s.0, s.1))
        }),
    }
    .flatten();
    let change = (has_prior && rng.random_bool(0.45))
        .then(|| CHANGES.choose(rng).copied())
        .flatten();
    let hedgeable = matches!(
        def.canonical,
        "pneumonia"
            | "atelectasis"
            | "consolidation"
            | "pleural effusion"
            | "pneumothorax"
            | "lung nodule"
    );
    let hedge = (hedgeable && rng.random_bool(0.3))
        .then(|| {
            let forms: Vec<_> = HEDGES
                .iter()
                .filter(|h| h.2 != HedgeForm::Link || def.style == FindingStyle::Parenchymal)
                .collect();
            forms.choose(rng).map(|h| **h)
        })
        .flatten();
    Planned {
        def,
        regions,
        laterality,
        severity,
        change,
        hedge,
    }
}

fn laterality_of(regions: &[&str]) -> Option<Laterality> {
    let sides: Vec<Laterality> = regions
        .iter()
        .filter_map(|r| vocab::region(r).and_then(|d| d.laterality))
        .collect();
    let has = |l| sides.contains(&l);
    if has(Laterality::Bilateral) || (has(Laterality::Left) && has(Laterality::Right)) {
        Some(Laterality::Bilateral)
    } else {
        sides.first().copied()
    }
}

fn plan_devices<R: Rng>(
    rng: &mut R,
    ctx: &ReportContext,
) -> Vec<(&'static vocab::DeviceDef, String)> {
    let with_devices = rng.random_bool(if ctx.portable { 0.6 } else { 0.08 });
    if !with_devices {
        return Vec::new();
    }
    let mut out = Vec::new();
    for device in DEVICES {
        let p = if ctx.portable {
            device.prevalence
        } else {
            device.prevalence * 0.3
        };
        if rng.random_bool(p) {
            out.push((device, String::new()));
        }
    }
    if out.is_empty() {
        let device = DEVICES.choose(rng).unwrap_or(&DEVICES[0]);
        out.push((device, String::new()));
    }
    for (device, side) in &mut out {
        if device.sided {
            *side = if rng.random_bool(0.65) {
                "right"
            } else {
                "left"
            }
            .to_owned();
        }
    }
    out
}

fn device_sentence<R: Rng>(
    rng: &mut R,
    device: &'static vocab::DeviceDef,
    side: &str,
    has_prior: bool,
) -> Sentence {
    let (template, regions) = device
        .templates
        .choose(rng)
        .copied()
        .unwrap_or(device.templates[0]);
    let cm = format!("{:.1}", f64::from(rng.random_range(20u32..70)) / 10.0);
    let cm = cm.strip_suffix(".0").unwrap_or(&cm).to_owned();
    let mut text = template
        .replace("{Side}", &capitalize(side))
        .replace("{side}", side)
        .replace("{cm}", &cm);
    let change = (has_prior && rng.random_bool(0.3)).then_some("unchanged");
    if change.is_some() {
        text.push_str(", unchanged in position");
    }
    text.push('.');
    let regions: Vec<String> = regions.iter().map(|r| r.replace("{side}", side)).collect();
    let laterality = match side {
        "left" => Some(Laterality::Left),
        "right" => Some(Laterality::Right),
        _ => None,
    };
    Sentence {
        text,
        statements: vec![Statement {
            finding: device.canonical,
            positiveness: Positiveness::Pos,
            certainty: Certainty::Certain,
            regions,
            laterality,
            severity: None,
            change,
        }],
    }
}

/// Noun phrase of a planned finding without hedge or predicate change.
fn noun_phrase<R: Rng>(rng: &mut R, p: &Planned) -> String {
    let mut words: Vec<String> = Vec::new();
    if let Some((phrase, _, ChangeForm::Prefix)) = p.change {
        words.push(phrase.to_owned());
    }
    if let Some((severity, _)) = p.severity {
        words.push(severity.to_owned());
    }
    let bilateral = p.laterality == Some(Laterality::Bilateral);
    let noun = match (bilateral, p.def.plural) {
        (true, Some(plural)) if p.def.style != FindingStyle::Parenchymal => plural,
        _ => p.def.nouns.choose(rng).copied().unwrap_or(p.def.canonical),
    };
    match p.def.style {
        FindingStyle::Pleural => {
            let side = match (
                p.laterality,
                p.regions.first().and_then(|r| vocab::region(r)),
            ) {
                (Some(Laterality::Bilateral), _) => Some("bilateral".to_owned()),
                (_, Some(region)) => region.adjectives.choose(rng).map(|a| (*a).to_owned()),
                _ => None,
            };
            words.extend(side);
            words.push(noun.to_owned());
        }
        FindingStyle::Parenchymal => {
            let region = p.regions.first().and_then(|r| vocab::region(r));
            let use_locative =
                region.is_some_and(|r| !r.locatives.is_empty()) && rng.random_bool(0.35);
            match region {
                Some(r) if use_locative => {
                    words.push(noun.to_owned());
                    words.extend(r.locatives.choose(rng).map(|l| (*l).to_owned()));
                }
                Some(r) => {
                    words.extend(r.adjectives.choose(rng).map(|a| (*a).to_owned()));
                    words.push(noun.to_owned());
                }
                None => words.push(noun.to_owned()),
            }
        }
        FindingStyle::Osseous => {
            if let Some(region) = p.regions.first().and_then(|r| vocab::region(r)) {
                words.extend(region.adjectives.first().map(|a| (*a).to_owned()));
            }
            words.push(
                if rng.random_bool(0.5) {
                    "rib fractures"
                } else {
                    "rib fracture"
                }
                .to_owned(),
            );
        }
        FindingStyle::Diffuse | FindingStyle::Cardiac => words.push(noun.to_owned()),
    }
    words.join(" ")
}

fn statement_of(p: &Planned, certainty: Certainty) -> Statement {
    Statement {
        finding: p.def.canonical,
        positiveness: Positiveness::Pos,
        certainty,
        regions: p.regions.iter().map(|r| (*r).to_owned()).collect(),
        laterality: p.laterality,
        severity: p.severity.map(|s| s.1),
        change: p.change.map(|c| c.1),
    }
}

fn positive_sentence<R: Rng>(rng: &mut R, p: &Planned) -> Sentence {
    if p.def.canonical == "cardiomegaly" && p.hedge.is_none() && rng.random_bool(0.4) {
        let degree = match p.severity.map(|s| s.1) {
            Some("severe") => "severely ",
            Some("moderate") => "moderately ",
            Some("mild") => "mildly ",
            _ => "",
        };
        let mut text = format!("The heart is {degree}enlarged");
        if let Some((phrase, _, ChangeForm::Predicate)) = p.change {
            text = format!("Cardiac enlargement {phrase}");
        }
        let mut statement = statement_of(p, Certainty::Certain);
        if p.change.is_some_and(|c| c.2 == ChangeForm::Prefix) {
            statement.change = None;
        }
        if degree.is_empty() {
            statement.severity = None;
        }
        return Sentence {
            text: format!("{text}."),
            statements: vec![statement],
        };
    }
    let phrase = noun_phrase(rng, p);
    let predicate = match p.change {
        Some((phrase, _, ChangeForm::Predicate)) => format!(" {phrase}"),
        _ => String::new(),
    };
    match p.hedge {
        Some((hedge, certainty, HedgeForm::Prefix)) => Sentence {
            text: format!("{} {phrase}{predicate}.", capitalize(hedge)),
            statements: vec![statement_of(p, certainty)],
        },
        Some((hedge, certainty, HedgeForm::Suffix)) => Sentence {
            text: format!("{} {hedge}.", capitalize(&phrase)),
            statements: vec![{
                let mut s = statement_of(p, certainty);
                if p.change.is_some_and(|c| c.2 == ChangeForm::Predicate) {
                    s.change = None;
                }
                s
            }],
        },
        Some((hedge, certainty, HedgeForm::Link)) => {
            let opacity = Planned {
                def: vocab::finding("lung opacity").unwrap_or(&FINDINGS[0]),
                severity: None,
                hedge: None,
                ..p.clone()
            };
            let opacity_phrase = noun_phrase(
                rng,
                &Planned {
                    change: None,
                    ..opacity.clone()
                },
            );
            let noun = p.def.nouns.first().copied().unwrap_or(p.def.canonical);
            let separator = if hedge == "likely" { ", " } else { " " };
            let mut diagnosis = statement_of(p, certainty);
            diagnosis.severity = None;
            diagnosis.change = None;
            let mut opacity_statement = statement_of(&opacity, Certainty::Certain);
            opacity_statement.change = None;
            Sentence {
                text: format!("{}{separator}{hedge} {noun}.", capitalize(&opacity_phrase)),
                statements: vec![opacity_statement, diagnosis],
            }
        }
        None => {
            let text = if predicate.is_empty() && rng.random_bool(0.4) {
                let is_plural = phrase.ends_with('s') && !phrase.ends_with("sis");
                format!(
                    "There {} {}{phrase}.",
                    if is_plural { "are" } else { "is" },
                    if is_plural { "" } else { article(&phrase) }
                )
            } else {
                format!("{}{predicate}.", capitalize(&phrase))
            };
            Sentence {
                text,
                statements: vec![statement_of(p, Certainty::Certain)],
            }
        }
    }
}

fn combined_sentence<R: Rng>(rng: &mut R, a: &Planned, b: &Planned) -> Sentence {
    let first = noun_phrase(rng, a);
    let second = noun_phrase(rng, b);
    Sentence {
        text: format!("{} and {second}.", capitalize(&first)),
        statements: vec![
            statement_of(a, Certainty::Certain),
            statement_of(b, Certainty::Certain),
        ],
    }
}

fn negative_sentences<R: Rng>(rng: &mut R, planned: &[Planned]) -> Vec<Sentence> {
    let positive = |name: &str| planned.iter().any(|p| p.def.canonical == name);
    let mut candidates: Vec<&'static FindingDef> = FINDINGS
        .iter()
        .filter(|f| f.negatable && !positive(f.canonical))
        .collect();
    let mut out = Vec::new();
    if candidates.is_empty() {
        return out;
    }
    // Pneumothorax and effusion are negated in most reports; others now and then.
    candidates.sort_by_key(|f| match f.canonical {
        "pneumothorax" => 0,
        "pleural effusion" => 1,
        "consolidation" => 2,
        _ => 3,
    });
    let count = rng.random_range(1..=candidates.len().min(3));
    let mut listed: Vec<&'static FindingDef> = candidates[..count].to_vec();
    // Written in the usual order: "No focal consolidation, pleural effusion, or pneumothorax."
    listed.sort_by_key(|f| match f.canonical {
        "consolidation" => 0,
        "pleural effusion" => 1,
        "pneumothorax" => 2,
        _ => 3,
    });
    let mut rest: Vec<&'static FindingDef> = candidates[count..].to_vec();
    if rest.len() > 1 && rng.random_bool(0.3) {
        let extra = rest.remove(rng.random_range(0..rest.len()));
        out.push(negation(rng, &[extra]));
    }
    if rng.random_bool(0.15) && listed.len() > 1 {
        let single = listed.remove(0);
        out.push(negation(rng, &[single]));
    }
    out.insert(0, negation(rng, &listed));
    out
}

fn negation<R: Rng>(rng: &mut R, defs: &[&'static FindingDef]) -> Sentence {
    let nouns: Vec<&str> = defs.iter().map(|d| d.nouns[0]).collect();
    let list = match nouns.as_slice() {
        [one] => (*one).to_owned(),
        [a, b] => format!("{a} or {b}"),
        [init @ .., last] => format!("{}, or {last}", init.join(", ")),
        [] => String::new(),
    };
    let form = rng.random_range(0..4);
    let text = match form {
        0 => format!("There is no {list}."),
        1 if defs.len() == 1 => format!("No evidence of {list}."),
        2 if defs.len() > 1 => format!("No focal {list} is seen."),
        _ => format!("No {list}."),
    };
    // "No focal consolidation, pleural effusion" reads fine; "focal" needs a parenchymal head.
    let text = if text.starts_with("No focal ") && defs[0].style != FindingStyle::Parenchymal {
        format!("No {list} is seen.")
    } else {
        text
    };
    Sentence {
        text,
        statements: defs
            .iter()
            .map(|d| Statement {
                finding: d.canonical,
                positiveness: Positiveness::Neg,
                certainty: Certainty::Certain,
                regions: Vec::new(),
                laterality: None,
                severity: None,
                change: None,
            })
            .collect(),
    }
}

fn normal_sentences<R: Rng>(rng: &mut R, planned: &[Planned]) -> Vec<Sentence> {
    let positive = |name: &str| planned.iter().any(|p| p.def.canonical == name);
    let mut out = Vec::new();
    for (text, negs, regions) in NORMAL_SENTENCES {
        if negs.iter().any(|n| positive(n)) {
            continue;
        }
        let lungs = negs.contains(&"lung opacity");
        if lungs
            && planned
                .iter()
                .any(|p| p.def.style == FindingStyle::Parenchymal)
        {
            continue;
        }
        if !rng.random_bool(0.35) {
            continue;
        }
        if out
            .iter()
            .any(|s: &Sentence| s.statements.iter().any(|st| negs.contains(&st.finding)))
        {
            continue;
        }
        out.push(Sentence {
            text: format!("{text}."),
            statements: negs
                .iter()
                .map(|n| Statement {
                    finding: vocab::finding(n).map_or("lung opacity", |f| f.canonical),
                    positiveness: Positiveness::Neg,
                    certainty: Certainty::Certain,
                    regions: regions.iter().map(|r| (*r).to_owned()).collect(),
                    laterality: None,
                    severity: None,
                    change: None,
                })
                .collect(),
        });
    }
    out
}

fn pick_indication<R: Rng>(
    rng: &mut R,
    planned: &[Planned],
    devices: &[(&'static vocab::DeviceDef, String)],
) -> String {
    let related: Vec<&str> = vocab::INDICATIONS
        .iter()
        .filter(|(_, about)| {
            about.is_some_and(|a| {
                planned.iter().any(|p| p.def.canonical == a)
                    || devices.iter().any(|d| d.0.canonical == a)
            })
        })
        .map(|(text, _)| *text)
        .collect();
    if !related.is_empty() && rng.random_bool(0.6) {
        return related.choose(rng).copied().unwrap_or("___").to_owned();
    }
    vocab::INDICATIONS
        .choose(rng)
        .map_or("___", |i| i.0)
        .to_owned()
}

fn section_name<R: Rng>(rng: &mut R, canonical: &str, variant_rate: f64) -> &'static str {
    let variants = vocab::SECTION_NAMES
        .iter()
        .find(|(name, _)| *name == canonical)
        .map_or(&[][..], |(_, v)| *v);
    if variants.len() > 1 && rng.random_bool(variant_rate) {
        variants[1..].choose(rng).copied().unwrap_or(variants[0])
    } else {
        variants.first().copied().unwrap_or("FINDINGS")
    }
}

fn assemble<R: Rng>(
    rng: &mut R,
    ctx: &ReportContext,
    indication: Option<&str>,
    findings_section: Vec<Sentence>,
    impression: Vec<Sentence>,
) -> (String, Vec<FindingTruth>) {
    let mut text = String::with_capacity(1500);
    if rng.random_bool(0.05) {
        let first = impression
            .first()
            .map_or("No acute process.", |s| s.text.as_str());
        text.push_str(&format!(
            " WET READ: ___ ___ ___ {}:{:02} PM\n",
            rng.random_range(1..12),
            rng.random_range(0..60)
        ));
        push_wrapped(&mut text, &format!("  {first}"));
        text.push_str(
            " ______________________________________________________________________________\n",
        );
    }
    text.push_str("                                 FINAL REPORT\n");
    if rng.random_bool(0.06) {
        text.push_str(if ctx.portable {
            " PORTABLE CHEST OF ___\n \n"
        } else {
            " CHEST RADIOGRAPH\n \n"
        });
    } else {
        let name = section_name(rng, "EXAMINATION", 0.1);
        text.push_str(&format!(" {name}:  {}\n \n", ctx.exam));
    }
    if let Some(indication) = indication {
        let name = section_name(rng, "INDICATION", 0.35);
        push_wrapped(&mut text, &format!(" {name}:  {indication}"));
        text.push_str(" \n");
    }
    if rng.random_bool(0.8) {
        let technique = if ctx.portable {
            "Portable AP chest radiograph."
        } else {
            "Chest PA and lateral."
        };
        text.push_str(&format!(" TECHNIQUE:  {technique}\n \n"));
    }
    let comparison = if ctx.has_prior {
        ["___.", "Chest radiograph from ___.", "Prior study ___."]
            .choose(rng)
            .copied()
            .unwrap_or("___.")
    } else {
        "None."
    };
    text.push_str(&format!(
        " {}:  {comparison}\n \n",
        section_name(rng, "COMPARISON", 0.1)
    ));

    let mut truths = Vec::new();
    let roll: f64 = rng.random();
    let (with_findings, with_impression) = match roll {
        r if r < 0.08 => (false, true),
        r if r < 0.18 => (true, false),
        _ => (true, true),
    };
    if with_findings {
        let name = section_name(rng, "FINDINGS", 0.05);
        text.push_str(&format!(" {name}:\n \n"));
        let mut body = String::new();
        if !ctx.portable && rng.random_bool(0.3) {
            body.push_str("PA and lateral views of the chest provided. ");
        }
        for s in &findings_section {
            body.push_str(&s.text);
            body.push(' ');
        }
        push_wrapped(&mut text, &format!(" {}", body.trim_end()));
        text.push_str(" \n");
        collect(&mut truths, &findings_section, "FINDINGS");
    }
    if with_impression {
        let name = section_name(rng, "IMPRESSION", 0.15);
        text.push_str(&format!(" {name}:\n \n"));
        let lines: &[Sentence] = if with_findings {
            &impression
        } else {
            &findings_section
        };
        let numbered = lines.len() > 1 && rng.random_bool(0.8);
        for (i, s) in lines.iter().enumerate() {
            if numbered {
                push_wrapped(&mut text, &format!(" {}. {}", i + 1, s.text));
                if i + 1 < lines.len() {
                    text.push_str(" \n");
                }
            } else {
                push_wrapped(&mut text, &format!(" {}", s.text));
            }
        }
        collect(&mut truths, lines, "IMPRESSION");
    }
    (text, truths)
}

fn collect(truths: &mut Vec<FindingTruth>, sentences: &[Sentence], section: &'static str) {
    for sentence in sentences {
        for s in &sentence.statements {
            truths.push(FindingTruth {
                finding: s.finding.to_owned(),
                positiveness: s.positiveness,
                certainty: s.certainty,
                regions: s.regions.clone(),
                laterality: s.laterality,
                severity: s.severity.map(str::to_owned),
                change: s.change.map(str::to_owned),
                section,
                sentence: sentence.text.clone(),
            });
        }
    }
}

/// Appends `line` wrapped at 76 columns; continuation lines get a one-space indent.
fn push_wrapped(out: &mut String, line: &str) {
    const WIDTH: usize = 76;
    let mut current = String::new();
    for word in line.split(' ') {
        if !current.is_empty()
            && current.len() + 1 + word.len() > WIDTH
            && !current.trim().is_empty()
        {
            out.push_str(&current);
            out.push('\n');
            current = String::from(" ");
            current.push_str(word);
        } else {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
    }
    out.push_str(&current);
    out.push('\n');
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn article(phrase: &str) -> &'static str {
    match phrase.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an ",
        _ => "a ",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn reports_have_header_and_matching_truth() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for i in 0..300 {
            let ctx = ReportContext {
                exam: "CHEST (PA AND LAT)",
                portable: i % 2 == 0,
                has_prior: i % 3 != 0,
            };
            let report = generate_report(&mut rng, &ctx);
            assert!(report.text.contains("FINAL REPORT"));
            let flat = report.text.split_whitespace().collect::<Vec<_>>().join(" ");
            for f in &report.findings {
                assert!(
                    flat.contains(&f.sentence),
                    "{:?} not in {}",
                    f.sentence,
                    report.text
                );
            }
            let any_positive = report.findings.iter().any(|f| {
                f.positiveness == Positiveness::Pos
                    && !DEVICES.iter().any(|d| d.canonical == f.finding)
            });
            assert!(!(report.normal && any_positive));
            for line in report.text.lines() {
                assert!(line.len() <= 90, "long line {line:?}");
            }
        }
    }
}
