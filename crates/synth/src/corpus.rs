//! Corpus generation: plan patients, generate each patient in parallel, write the outputs.
//!
//! ```text
//!  plan (sequential, cheap)      patients' study counts from mix(seed, STUDY_COUNT, i)
//!        │                        → global study offsets, id space
//!        ▼
//!  per patient (rayon)           ChaCha8(mix(seed, PATIENT, i)): split, dates, studies
//!        │                        writes files/…/s*.txt, imagenome/…json, cxas/…/s*.json
//!        │                        returns CSV rows, ground-truth lines, counts
//!        ▼
//!  gather (patient order)        *.csv.gz, ground_truth.jsonl, [mimic-cxr-reports.zip],
//!                                manifest.json
//! ```
//! Files are written without fsync; the output is byte-identical for a seed whatever the
//! number of threads.

use std::fs;
use std::io::Write;
use std::path::Path;

use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::anatomy::{self, Raster};
use crate::error::{Result, SynthError};
use crate::ids::{self, IdSpace};
use crate::images::{self, View};
use crate::report::{self, ReportContext};
use crate::truth::{self, StudyTruth};
use crate::{SynthOptions, SynthSummary, csv_out, cxas, imagenome};

/// Version written into `manifest.json`; bump when the output for a seed changes.
pub const GENERATOR_VERSION: &str = "cxrlake-synth/1";

/// Mean studies per patient in MIMIC-CXR (227,835 studies / 65,379 patients).
const MEAN_STUDIES_PER_PATIENT: f64 = 3.48;

#[derive(Debug, Default)]
struct PatientOutput {
    metadata_rows: String,
    split_rows: String,
    label_rows: String,
    truth_lines: String,
    reports: Vec<(String, String)>,
    studies: usize,
    images: usize,
    frontal_images: usize,
    scene_graphs: usize,
    boxes: usize,
    cxas_files: usize,
    masks: usize,
}

struct Plan<'a> {
    options: &'a SynthOptions,
    ids: IdSpace,
    study_offsets: Vec<usize>,
    study_counts: Vec<usize>,
}

#[derive(Debug, Serialize)]
struct Manifest<'a> {
    generator: &'a str,
    version: &'a str,
    seed: u64,
    cxas_fraction: f64,
    patients: usize,
    studies: usize,
    images: usize,
    frontal_images: usize,
    imagenome_scene_graphs: usize,
    boxes: usize,
    cxas_files: usize,
    masks: usize,
    reports_zip: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
}

/// Study counts per patient summing to exactly `studies`.
fn plan_study_counts(seed: u64, studies: usize) -> Vec<usize> {
    let p = 1.0 / MEAN_STUDIES_PER_PATIENT;
    let mut counts = Vec::with_capacity(studies / 3 + 1);
    let mut total = 0;
    while total < studies {
        let bits = ids::mix(seed, ids::tag::STUDY_COUNT, counts.len() as u64);
        let u = ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let k = 1 + (u.ln() / (1.0 - p).ln()).floor().min(60.0) as usize;
        let k = k.min(studies - total);
        counts.push(k);
        total += k;
    }
    counts
}

/// Generates the corpus described by `options`.
pub fn generate(options: &SynthOptions) -> Result<SynthSummary> {
    validate(options)?;
    let out = options.out.as_path();
    for dir in ["files", "imagenome/scene_graph", "cxas"] {
        fs::create_dir_all(out.join(dir)).map_err(|e| SynthError::io(out.join(dir), e))?;
    }
    let study_counts = plan_study_counts(options.seed, options.studies);
    let mut study_offsets = Vec::with_capacity(study_counts.len());
    let mut offset = 0;
    for count in &study_counts {
        study_offsets.push(offset);
        offset += count;
    }
    let plan = Plan {
        options,
        ids: IdSpace::new(options.seed, study_counts.len(), options.studies),
        study_offsets,
        study_counts,
    };
    let range = options.shard.map_or(0..plan.study_counts.len(), |shard| {
        shard.patients(plan.study_counts.len())
    });
    let patients: Vec<PatientOutput> = range
        .into_par_iter()
        .map(|index| generate_patient(&plan, index))
        .collect::<Result<_>>()?;

    let header = csv_out::labels_header();
    csv_out::write_gz(
        &out.join("mimic-cxr-2.0.0-metadata.csv.gz"),
        csv_out::METADATA_HEADER,
        patients.iter().map(|p| p.metadata_rows.as_str()),
    )?;
    csv_out::write_gz(
        &out.join("mimic-cxr-2.0.0-split.csv.gz"),
        csv_out::SPLIT_HEADER,
        patients.iter().map(|p| p.split_rows.as_str()),
    )?;
    for name in [
        "mimic-cxr-2.0.0-chexpert.csv.gz",
        "mimic-cxr-2.0.0-negbio.csv.gz",
    ] {
        csv_out::write_gz(
            &out.join(name),
            &header,
            patients.iter().map(|p| p.label_rows.as_str()),
        )?;
    }
    write_truth(&out.join("ground_truth.jsonl"), &patients)?;
    if options.zip {
        write_zip(&out.join("mimic-cxr-reports.zip"), &patients)?;
    }

    let sum = |f: fn(&PatientOutput) -> usize| patients.iter().map(f).sum::<usize>();
    let summary = SynthSummary {
        out: options.out.clone(),
        seed: options.seed,
        shard: options.shard,
        patients: patients.len(),
        studies: sum(|p| p.studies),
        images: sum(|p| p.images),
        frontal_images: sum(|p| p.frontal_images),
        scene_graphs: sum(|p| p.scene_graphs),
        boxes: sum(|p| p.boxes),
        cxas_files: sum(|p| p.cxas_files),
        masks: sum(|p| p.masks),
    };
    let manifest = Manifest {
        generator: "cxrlake-synth",
        version: GENERATOR_VERSION,
        seed: options.seed,
        cxas_fraction: options.cxas_fraction,
        patients: summary.patients,
        studies: summary.studies,
        images: summary.images,
        frontal_images: summary.frontal_images,
        imagenome_scene_graphs: summary.scene_graphs,
        boxes: summary.boxes,
        cxas_files: summary.cxas_files,
        masks: summary.masks,
        reports_zip: options.zip,
        shard: options.shard.map(|shard| shard.to_string()),
    };
    let path = out.join("manifest.json");
    fs::write(&path, serde_json::to_vec_pretty(&manifest)?)
        .map_err(|e| SynthError::io(&path, e))?;
    Ok(summary)
}

fn validate(options: &SynthOptions) -> Result<()> {
    if options.studies == 0 || options.studies > 9_000_000 {
        return Err(SynthError::InvalidOptions(format!(
            "--studies must be between 1 and 9000000 (MIMIC-CXR has 227835), got {}",
            options.studies
        )));
    }
    if !(0.0..=1.0).contains(&options.cxas_fraction) {
        return Err(SynthError::InvalidOptions(format!(
            "the CXAS fraction must be within 0..=1, got {}",
            options.cxas_fraction
        )));
    }
    if let Ok(mut entries) = fs::read_dir(&options.out)
        && entries.next().is_some()
    {
        return Err(SynthError::InvalidOptions(format!(
            "output directory {} is not empty; pass a new or empty directory",
            options.out.display()
        )));
    }
    Ok(())
}

fn generate_patient(plan: &Plan<'_>, index: usize) -> Result<PatientOutput> {
    let options = plan.options;
    let out_dir = options.out.as_path();
    let mut rng = ids::patient_rng(options.seed, index as u64);
    let subject_id = plan.ids.subject_id(index);
    let split = match rng.random_range(0..1000) {
        0..8 => "validate",
        8..20 => "test",
        _ => "train",
    };
    let patient_dir = out_dir.join(format!("files/p{}/p{subject_id}", subject_id / 1_000_000));
    fs::create_dir_all(&patient_dir).map_err(|e| SynthError::io(&patient_dir, e))?;
    let cxas_dir = out_dir.join(format!("cxas/p{}/p{subject_id}", subject_id / 1_000_000));
    if options.cxas_fraction > 0.0 {
        fs::create_dir_all(&cxas_dir).map_err(|e| SynthError::io(&cxas_dir, e))?;
    }
    let mut day = rng.random_range(0..100 * 365u32);
    let mut output = PatientOutput::default();

    for j in 0..plan.study_counts[index] {
        let study_id = plan.ids.study_id(plan.study_offsets[index] + j);
        if j > 0 {
            day += rng.random_range(1..400u32);
        }
        let date = images::format_date(day);
        let study_images = images::study_images(&mut rng);
        let ctx = ReportContext {
            exam: study_images.exam,
            portable: study_images.portable,
            has_prior: j > 0,
        };
        let report = report::generate_report(&mut rng, &ctx);
        let truth = StudyTruth {
            patient_id: format!("p{subject_id}"),
            study_id: format!("s{study_id}"),
            findings: report.findings,
            indication: report.indication,
            normal: report.normal,
        };

        let report_rel = ids::report_path(subject_id, study_id);
        let report_path = out_dir.join(&report_rel);
        fs::write(&report_path, report.text.as_bytes())
            .map_err(|e| SynthError::io(&report_path, e))?;
        if options.zip {
            output.reports.push((report_rel, report.text));
        }

        let mut study_rasters = Vec::new();
        for image in &study_images.images {
            push_row(
                &mut output.metadata_rows,
                &[
                    &image.dicom_id,
                    &subject_id.to_string(),
                    &study_id.to_string(),
                    study_images.procedure,
                    image.view.position(),
                    &image.rows.to_string(),
                    &image.columns.to_string(),
                    &date,
                    &image.study_time,
                    study_images.procedure,
                    image.view.code_meaning(),
                    image.orientation,
                ],
            );
            push_row(
                &mut output.split_rows,
                &[
                    &image.dicom_id,
                    &study_id.to_string(),
                    &subject_id.to_string(),
                    split,
                ],
            );
            let anatomy = if image.view.is_lateral() {
                anatomy::lateral(
                    &mut rng,
                    image.columns,
                    image.rows,
                    report.heart_enlargement,
                )
            } else {
                anatomy::frontal(
                    &mut rng,
                    image.columns,
                    image.rows,
                    report.heart_enlargement,
                )
            };
            let draw: f64 = rng.random();
            let with_masks = draw < options.cxas_fraction && image.view != View::Unknown;
            let rasters: Vec<(&'static str, Raster)> = if with_masks {
                anatomy
                    .structures
                    .iter()
                    .map(|s| (s.name, s.shape.rasterize(anatomy.height, anatomy.width)))
                    .collect()
            } else {
                Vec::new()
            };
            if image.view.is_frontal() {
                output.frontal_images += 1;
                let extent_of = |name: &str| match rasters.iter().find(|(n, _)| *n == name) {
                    Some((_, raster)) => raster.extent,
                    None => anatomy
                        .get(name)
                        .and_then(|s| s.shape.extent(anatomy.height, anatomy.width)),
                };
                let boxes = imagenome::boxes(&mut rng, &anatomy, extent_of);
                output.boxes += boxes.iter().filter(|b| b.1.is_some()).count();
                let image_ref = imagenome::ImageRef {
                    dicom_id: &image.dicom_id,
                    subject_id,
                    study_id,
                    viewpoint: image.view.position(),
                    width: image.columns,
                    height: image.rows,
                };
                let json = imagenome::scene_graph_json(&image_ref, &boxes, &truth)?;
                let path = out_dir.join(format!(
                    "imagenome/scene_graph/{}_SceneGraph.json",
                    image.dicom_id
                ));
                fs::write(&path, json).map_err(|e| SynthError::io(&path, e))?;
                output.scene_graphs += 1;
            }
            if with_masks {
                study_rasters.push((image, rasters));
            }
        }
        if !study_rasters.is_empty() {
            let cxas_images: Vec<cxas::CxasImage<'_>> = study_rasters
                .iter()
                .map(|(image, rasters)| cxas::CxasImage {
                    dicom_id: &image.dicom_id,
                    width: image.columns,
                    height: image.rows,
                    rasters,
                })
                .collect();
            let (json, masks) = cxas::cxas_study_json(&cxas_images)?;
            let path = cxas_dir.join(format!("s{study_id}.json"));
            fs::write(&path, json).map_err(|e| SynthError::io(&path, e))?;
            output.cxas_files += 1;
            output.masks += masks;
        }
        output.images += study_images.images.len();

        let labels = truth::chexpert_labels(&truth);
        output
            .label_rows
            .push_str(&format!("{subject_id},{study_id}"));
        for label in labels {
            output.label_rows.push(',');
            output.label_rows.push_str(label.map_or("", |l| l.as_csv()));
        }
        output.label_rows.push('\n');
        output.truth_lines.push_str(&serde_json::to_string(&truth)?);
        output.truth_lines.push('\n');
        output.studies += 1;
    }
    Ok(output)
}

fn push_row(out: &mut String, fields: &[&str]) {
    for (i, field) in fields.iter().enumerate() {
        debug_assert!(
            !field.contains([',', '"', '\n']),
            "CSV field needs quoting: {field}"
        );
        if i > 0 {
            out.push(',');
        }
        out.push_str(field);
    }
    out.push('\n');
}

fn write_truth(path: &Path, patients: &[PatientOutput]) -> Result<()> {
    let io = |e| SynthError::io(path, e);
    let mut file = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(path).map_err(io)?);
    for patient in patients {
        file.write_all(patient.truth_lines.as_bytes()).map_err(io)?;
    }
    file.flush().map_err(io)
}

fn write_zip(path: &Path, patients: &[PatientOutput]) -> Result<()> {
    let io = |e| SynthError::io(path, e);
    let file = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(path).map_err(io)?);
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for patient in patients {
        for (rel, text) in &patient.reports {
            zip.start_file(rel.as_str(), options)?;
            zip.write_all(text.as_bytes()).map_err(io)?;
        }
    }
    zip.finish()?.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn study_counts_sum_and_average() {
        let counts = plan_study_counts(5, 50_000);
        assert_eq!(counts.iter().sum::<usize>(), 50_000);
        let mean = 50_000.0 / counts.len() as f64;
        assert!((3.2..3.8).contains(&mean), "{mean}");
    }
}
