//! The ingest parsers: report files (content and name), the MIMIC-CXR-JPG CSVs (text → rows →
//! table rows, plain and gzip), Chest ImaGenome scene graphs, CXAS COCO files and zip archives.
//! On top of "no panic, a reason for every refusal", the rows a parser returns must make a
//! record batch of their table, and a few invariants of the rows are checked.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cxrlake_fuzz::{Field, Outcome, Target, check};
use cxrlake_ingest::discover::{self, FileReader, InputFile, Kind, Labeler, Location};
use cxrlake_ingest::jpg_csv::{self, CsvInput, ImageInfo};
use cxrlake_ingest::quarantine::{Quarantined, Target as Table};
use cxrlake_ingest::writer::Row;
use cxrlake_ingest::{cxas, imagenome, reports};

use crate::corpus::corpus;

/// Tokens of the ingested formats.
const DICTIONARY: &[&str] = &[
    "FINAL REPORT",
    "FINDINGS:",
    "IMPRESSION:",
    "INDICATION:",
    "WET READ:",
    "p10000032",
    "s50414267",
    "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014",
    "dicom_id",
    "subject_id",
    "study_id",
    "ViewPosition",
    "Rows",
    "Columns",
    "split",
    "train",
    "validate",
    "test",
    "PA",
    "LATERAL",
    "1.0",
    "-1.0",
    "\"a,b\"",
    "\"\"",
    "\"image_id\": ",
    "\"patient_id\": ",
    "\"study_id\": ",
    "\"objects\": []",
    "\"attributes\": [[]]",
    "\"bbox_name\": ",
    "\"original_x1\": ",
    "\"original_x2\": ",
    "\"original_y2\": ",
    "\"images\": []",
    "\"annotations\": ",
    "\"categories\": ",
    "\"segmentation\": ",
    "\"size\": [0, 0]",
    "\"counts\": ",
    "\"counts\": [1, 2, 3]",
    "\"file_name\": ",
    "\"width\": ",
    "\"height\": ",
    "\"category_id\": ",
    "null",
    "{}",
    "[]",
    "PK\u{3}\u{4}",
    "PK\u{1}\u{2}",
    "PK\u{5}\u{6}",
];

/// A reason, or a refusal without one (which the harness reports).
fn rejected(record: &Quarantined) -> Outcome {
    Outcome::Rejected(record.reason.clone())
}

/// Every quarantined part's reason, combined with `outcome`.
fn with_parts(outcome: Outcome, parts: &[Quarantined]) -> Outcome {
    parts.iter().fold(outcome, |o, q| o.and(rejected(q)))
}

/// The rows make a record batch of their table.
fn batch<R: Row>(rows: &[R]) -> Outcome {
    match R::batch(rows) {
        Ok(_) => Outcome::Accepted,
        Err(err) => Outcome::Broken(format!("{} rows make no batch: {err}", R::TABLE)),
    }
}

fn input_file(kind: Kind, path: &Path) -> InputFile {
    let rel_path = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    InputFile {
        kind,
        location: Location::File(path.to_path_buf()),
        rel_path,
        size: std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

/// A scratch folder that lives as long as the test process.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-scratch")
        .join(name);
    std::fs::create_dir_all(&dir).expect("create scratch folder");
    dir
}

/// The images of the corpus' metadata CSV, as ingest knows them after reading it.
fn known_images() -> &'static HashMap<String, ImageInfo> {
    static IMAGES: OnceLock<HashMap<String, ImageInfo>> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let path = corpus().dir.join("mimic-cxr-2.0.0-metadata.csv.gz");
        let file = input_file(Kind::Metadata, &path);
        let mut input = CsvInput::open(
            &file,
            &mut FileReader::default(),
            Table::Images,
            jpg_csv::METADATA_COLUMNS,
        )
        .expect("open the metadata CSV");
        let mut images = HashMap::new();
        while let Some(row) = input.next_row() {
            let row = row.expect("a metadata row");
            let parsed = jpg_csv::metadata_row(&input, &row, &HashMap::new()).expect("parse");
            images.insert(parsed.image_id, parsed.info);
        }
        images
    })
}

// ---------------------------------------------------------------------------------------------
// Reports

#[test]
fn reports() {
    let seeds = corpus()
        .reports
        .iter()
        .map(|(_, text)| text.clone())
        .chain([
            b"                                 FINAL REPORT\n EXAMINATION:  CHEST (PA AND LAT)\n\n \
              INDICATION:  ___F with cough  // ?pna\n\n FINDINGS: \n\n No focal consolidation. \
              \n\n IMPRESSION: \n\n No acute cardiopulmonary process.\n"
                .to_vec(),
        ])
        .collect();
    let file = InputFile {
        kind: Kind::Report,
        location: Location::File(PathBuf::from("/corpus/files/p10/p10000032/s50414267.txt")),
        rel_path: "files/p10/p10000032/s50414267.txt".into(),
        size: 0,
    };
    check(
        &Target::new("reports", seeds, move |data| {
            match reports::parse(&file, data.to_vec()) {
                Ok(row) => {
                    if row.text.as_bytes() != data {
                        return Outcome::Broken("the report text is not the file's".into());
                    }
                    batch(&[row])
                }
                Err(record) => rejected(&record),
            }
        })
        .with_dictionary(DICTIONARY),
    );
}

/// The ids of a report come from its path (a zip member name here: any text).
#[test]
fn report_paths() {
    let seeds = corpus()
        .reports
        .iter()
        .map(|(path, _)| path.clone().into_bytes())
        .chain([
            b"mimic-cxr-reports/files/p10/p10000032/s50414267.txt".to_vec(),
            b"files/p19/p19999999/s59999999.txt".to_vec(),
        ])
        .collect();
    check(
        &Target::new("report_paths", seeds, |data| {
            let name = String::from_utf8_lossy(data).into_owned();
            let file = InputFile {
                kind: Kind::Report,
                location: Location::ZipMember {
                    archive: PathBuf::from("/corpus/mimic-cxr-reports.zip"),
                    index: 0,
                    name: name.clone(),
                },
                rel_path: name,
                size: 0,
            };
            match reports::parse(&file, b"FINDINGS: No effusion.".to_vec()) {
                Ok(row) => batch(&[row]),
                Err(record) => rejected(&record),
            }
        })
        .with_dictionary([
            "/",
            "files/",
            "p",
            "s",
            ".txt",
            "..",
            "\\",
            "p10000032",
            "s50414267",
        ])
        .with_max_len(4096),
    );
}

// ---------------------------------------------------------------------------------------------
// MIMIC-CXR-JPG CSVs: text (or gzip) → CsvInput rows → metadata / split / label rows

/// Reads a CSV file of `kind` as ingest does: header, rows, each row parsed; the parsed rows
/// make a batch.
fn csv_outcome(path: &Path, kind: Kind) -> Outcome {
    let file = input_file(kind, path);
    let mut label_columns = vec!["subject_id", "study_id"];
    label_columns.extend(cxrlake_schemas::sources::CHEXPERT_CSV_COLUMNS);
    let (table, required): (Table, &[&str]) = match kind {
        Kind::Metadata => (Table::Images, jpg_csv::METADATA_COLUMNS),
        Kind::Split => (Table::Splits, jpg_csv::SPLIT_COLUMNS),
        _ => (Table::ChexpertLabels, &label_columns),
    };
    let mut input = match CsvInput::open(&file, &mut FileReader::default(), table, required) {
        Ok(input) => input,
        Err(record) => return rejected(&record),
    };
    let mut outcome = Outcome::Accepted;
    let (mut images, mut splits, mut labels) = (Vec::new(), Vec::new(), Vec::new());
    let no_splits = HashMap::new();
    while let Some(row) = input.next_row() {
        let row = match row {
            Ok(row) => row,
            Err(record) => {
                outcome = outcome.and(rejected(&record));
                continue;
            }
        };
        let parsed = match kind {
            Kind::Metadata => {
                jpg_csv::metadata_row(&input, &row, &no_splits).map(|r| images.push(r))
            }
            Kind::Split => jpg_csv::split_row(&input, &row).map(|r| splits.push(r)),
            Kind::Labels(labeler) => {
                jpg_csv::label_row(&input, &row, labeler).map(|r| labels.push(r))
            }
            _ => Ok(()),
        };
        if let Err(reason) = parsed {
            // What ingest writes to quarantine for the row.
            outcome = outcome.and(rejected(&input.quarantine(&row, reason)));
        }
    }
    for image in &images {
        let side = |v: Option<i32>| v.is_none_or(|v| (1..=65_535).contains(&v));
        if !(side(image.info.rows) && side(image.info.columns)) {
            outcome = outcome.and(Outcome::Broken(format!(
                "image size accepted: {:?}",
                image.info
            )));
        }
    }
    outcome
        .and(if images.is_empty() {
            Outcome::Accepted
        } else {
            batch(&images)
        })
        .and(if splits.is_empty() {
            Outcome::Accepted
        } else {
            batch(&splits)
        })
        .and(if labels.is_empty() {
            Outcome::Accepted
        } else {
            batch(&labels)
        })
}

/// A CSV target: the input is written to a file named like the release's and read.
fn csv_target(name: &'static str, file_name: &str, kind: Kind, seeds: Vec<Vec<u8>>) -> Target {
    let path = scratch(name).join(file_name);
    Target::new(name, seeds, move |data| {
        std::fs::write(&path, data).expect("write the CSV");
        csv_outcome(&path, kind)
    })
    .with_dictionary(DICTIONARY)
    .with_max_len(64 << 10)
}

#[test]
fn csv_metadata() {
    let seeds = vec![
        corpus().metadata_csv.clone(),
        b"dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,PatientOrientationCodeSequence_CodeMeaning\n\
          02aa804e-bde0afdd-112c0b34-7bc16630-4e384014,10000032,50414267,CHEST (PA AND LAT),PA,3056,2544,21800506,213014.531,CHEST (PA AND LAT),postero-anterior,Erect\n\
          174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962,10000032,50414267,\"CHEST (PA, LAT)\",LATERAL,3056,2544,21800506,213014.531,CHEST (PA AND LAT),lateral,Erect\n"
            .to_vec(),
    ];
    check(&csv_target(
        "csv_metadata",
        "mimic-cxr-2.0.0-metadata.csv",
        Kind::Metadata,
        seeds,
    ));
}

#[test]
fn csv_split() {
    let seeds = vec![
        corpus().split_csv.clone(),
        b"dicom_id,study_id,subject_id,split\n\
          02aa804e-bde0afdd-112c0b34-7bc16630-4e384014,50414267,10000032,train\n\
          \"174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962\",50414267,10000032,test\n"
            .to_vec(),
    ];
    check(&csv_target(
        "csv_split",
        "mimic-cxr-2.0.0-split.csv",
        Kind::Split,
        seeds,
    ));
}

#[test]
fn csv_labels() {
    let seeds = vec![corpus().chexpert_csv.clone()];
    check(&csv_target(
        "csv_labels",
        "mimic-cxr-2.0.0-chexpert.csv",
        Kind::Labels(Labeler::Chexpert),
        seeds,
    ));
}

/// The gzip layer under the CSV reader (`.csv.gz`, several members as `MultiGzDecoder` reads).
#[test]
fn csv_gzip() {
    let gzip = |data: &[u8]| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).expect("gzip");
        encoder.finish().expect("gzip")
    };
    let split = &corpus().split_csv;
    let (head, tail) = split.split_at(split.len() / 2);
    let seeds = vec![gzip(split), [gzip(head), gzip(tail)].concat()];
    check(
        &csv_target(
            "csv_gzip",
            "mimic-cxr-2.0.0-split.csv.gz",
            Kind::Split,
            seeds,
        )
        .with_fields(gzip_fields),
    );
}

/// The header fields of every gzip member (flags, time, the extra field's length) and the last
/// member's trailer (CRC-32, the inflated size).
fn gzip_fields(data: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    for at in data
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == [0x1f, 0x8b, 0x08])
        .map(|(at, _)| at)
    {
        fields.push(Field {
            at: at + 3,
            width: 1,
        });
        fields.push(Field {
            at: at + 4,
            width: 4,
        });
        fields.push(Field {
            at: at + 10,
            width: 2,
        });
    }
    if data.len() >= 8 {
        fields.push(Field {
            at: data.len() - 8,
            width: 4,
        });
        fields.push(Field {
            at: data.len() - 4,
            width: 4,
        });
    }
    fields
}

// ---------------------------------------------------------------------------------------------
// Chest ImaGenome scene graphs

/// A small scene graph: the first objects and attributes of a corpus one.
fn small_scene_graph(json: &[u8]) -> Vec<u8> {
    let mut graph: serde_json::Value = serde_json::from_slice(json).expect("scene graph JSON");
    for key in ["objects", "attributes", "relationships"] {
        if let Some(list) = graph.get_mut(key).and_then(|v| v.as_array_mut()) {
            list.truncate(3);
        }
    }
    serde_json::to_vec_pretty(&graph).expect("serialise")
}

#[test]
fn imagenome_json() {
    let graphs = &corpus().scene_graphs;
    let (name, _) = &graphs[0];
    let mut seeds: Vec<Vec<u8>> = graphs
        .iter()
        .map(|(_, json)| small_scene_graph(json))
        .collect();
    seeds.push(graphs[0].1.clone());
    // All the corpus' graphs under one name: the name decides the image id, so the ids inside
    // must agree with it.
    let seeds = seeds
        .into_iter()
        .map(|seed| {
            let inside: serde_json::Value = serde_json::from_slice(&seed).expect("JSON");
            let id = inside["image_id"].as_str().unwrap_or_default().to_string();
            let wanted = name.trim_end_matches("_SceneGraph.json");
            String::from_utf8(seed)
                .expect("UTF-8")
                .replace(&id, wanted)
                .into_bytes()
        })
        .collect();
    let file = InputFile {
        kind: Kind::SceneGraph,
        location: Location::File(PathBuf::from(format!("/corpus/imagenome/{name}"))),
        rel_path: format!("imagenome/scene_graph/{name}"),
        size: 0,
    };
    let images = known_images();
    let unknown = HashMap::new();
    check(
        &Target::new("imagenome_json", seeds, move |data| {
            // Half of the inputs with the metadata (ids and clamping), half without.
            let images = if data.len() % 2 == 0 {
                images
            } else {
                &unknown
            };
            match imagenome::parse(&file, data, images) {
                Ok(unit) => {
                    let mut outcome = with_parts(Outcome::Accepted, &unit.quarantined);
                    for row in &unit.rows {
                        let [x1, y1, x2, y2] = row.bbox;
                        if !(row.bbox.iter().all(|v| v.is_finite() && *v >= 0.0)
                            && x1 <= x2
                            && y1 <= y2)
                        {
                            outcome = outcome.and(Outcome::Broken(format!(
                                "box {:?} of {} is not clamped and ordered",
                                row.bbox, row.bbox_name
                            )));
                        }
                    }
                    outcome.and(batch(&unit.rows))
                }
                Err(record) => rejected(&record),
            }
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(512 << 10),
    );
}

// ---------------------------------------------------------------------------------------------
// CXAS COCO files (compressed and uncompressed RLE)

/// A tiny CXAS file: one 4×5 image, two masks (one compressed, one as runs).
fn tiny_cxas(categories: bool) -> Vec<u8> {
    let counts = cxrlake_masks::encode_counts(&[2, 6, 4, 3, 5]);
    let categories = if categories {
        r#""categories": [{"id": 0, "name": "right lung"}, {"id": 1, "name": "heart"}],"#
    } else {
        ""
    };
    format!(
        r#"{{"images": [{{"id": 1, "file_name": "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014.jpg", "width": 5, "height": 4}}],
{categories}
"annotations": [
 {{"image_id": 1, "category_id": 0, "segmentation": {{"size": [4, 5], "counts": "{counts}"}}}},
 {{"image_id": 1, "category_id": 1, "segmentation": {{"size": [4, 5], "counts": [3, 4, 13]}}}}
]}}"#
    )
    .into_bytes()
}

#[test]
fn cxas_json() {
    let (rel, json) = &corpus().cxas[0];
    let seeds = vec![tiny_cxas(true), tiny_cxas(false), json.clone()];
    // The tiny seeds' dicom id is not in the metadata: the file's folder and name give the ids.
    let file = InputFile {
        kind: Kind::Cxas,
        location: Location::File(PathBuf::from(format!("/corpus/{rel}"))),
        rel_path: rel.clone(),
        size: 0,
    };
    let images = known_images();
    let unknown = HashMap::new();
    check(
        &Target::new("cxas_json", seeds, move |data| {
            let images = if data.len() % 2 == 0 {
                images
            } else {
                &unknown
            };
            match cxas::parse(&file, data, images) {
                Ok(units) => {
                    let mut outcome = Outcome::Accepted;
                    for unit in &units {
                        outcome = with_parts(outcome, &unit.quarantined);
                        for row in &unit.rows {
                            let pixels = i64::from(row.height) * i64::from(row.width);
                            if row.area < 0 || row.area > pixels {
                                outcome = outcome.and(Outcome::Broken(format!(
                                    "area {} of a {}x{} mask",
                                    row.area, row.height, row.width
                                )));
                            }
                        }
                        outcome = outcome.and(batch(&unit.rows));
                    }
                    outcome
                }
                Err(record) => rejected(&record),
            }
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(1 << 20),
    );
}

// ---------------------------------------------------------------------------------------------
// Zip archives: discovery (central directory, duplicate names), member reads, then the parser
// of each member's kind.

/// A zip of a report, a split CSV, a scene graph and a CXAS file.
fn mixed_zip() -> Vec<u8> {
    let corpus = corpus();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default();
    let stored = deflated.compression_method(zip::CompressionMethod::Stored);
    let (report_path, report) = &corpus.reports[0];
    let (graph_name, graph) = &corpus.scene_graphs[0];
    let members: [(String, &[u8], _); 4] = [
        (report_path.clone(), report, stored),
        (
            "mimic-cxr-2.0.0-split.csv".into(),
            &corpus.split_csv,
            deflated,
        ),
        (
            format!("scene_graph/{graph_name}"),
            &small_scene_graph(graph),
            deflated,
        ),
        (
            "cxas/p10/p10000032/s50414267.json".into(),
            &tiny_cxas(true),
            stored,
        ),
    ];
    zip.add_directory("files/", deflated).expect("directory");
    for (name, bytes, options) in members {
        zip.start_file(name, options).expect("start member");
        zip.write_all(bytes).expect("write member");
    }
    zip.finish().expect("finish zip").into_inner()
}

/// The header and directory fields of a zip: sizes, CRCs, name and extra lengths of the local
/// headers and central directory entries (with their ZIP64 fields), entry counts, directory size
/// and offset of the end records.
fn zip_fields(data: &[u8]) -> Vec<Field> {
    let u16_at = |at: usize| {
        data.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let mut fields = Vec::new();
    let field = |at: usize, width: usize| Field { at, width };
    for (at, signature) in data.windows(4).enumerate() {
        match signature {
            [b'P', b'K', 3, 4] => {
                fields.extend([14, 18, 22].map(|o| field(at + o, 4)));
                fields.extend([26, 28].map(|o| field(at + o, 2)));
            }
            [b'P', b'K', 1, 2] => {
                fields.extend([16, 20, 24, 42].map(|o| field(at + o, 4)));
                fields.extend([28, 30, 32].map(|o| field(at + o, 2)));
                // The ZIP64 extra field: 8-byte sizes and offset.
                let (Some(name), Some(extra)) = (u16_at(at + 28), u16_at(at + 30)) else {
                    continue;
                };
                let mut x = at + 46 + usize::from(name);
                let end = x + usize::from(extra);
                while x + 4 <= end {
                    let (Some(id), Some(size)) = (u16_at(x), u16_at(x + 2)) else {
                        break;
                    };
                    if id == 1 {
                        fields.extend((0..usize::from(size) / 8).map(|i| field(x + 4 + 8 * i, 8)));
                    }
                    x += 4 + usize::from(size);
                }
            }
            [b'P', b'K', 5, 6] => {
                fields.extend([8, 10, 20].map(|o| field(at + o, 2)));
                fields.extend([12, 16].map(|o| field(at + o, 4)));
            }
            [b'P', b'K', 6, 6] => fields.extend([24, 32, 40, 48].map(|o| field(at + o, 8))),
            [b'P', b'K', 6, 7] => fields.push(field(at + 8, 8)),
            _ => {}
        }
    }
    fields
}

/// [`mixed_zip`] written with ZIP64 records.
fn mixed_zip64() -> Vec<u8> {
    let source = mixed_zip();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(source)).expect("zip");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().large_file(true);
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        if member.is_dir() {
            continue;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut member, &mut bytes).expect("read");
        zip.start_file(member.name().to_string(), options)
            .expect("start");
        zip.write_all(&bytes).expect("write");
    }
    zip.finish().expect("finish").into_inner()
}

#[test]
fn zip_archive() {
    let seeds = vec![corpus().reports_zip.clone(), mixed_zip(), mixed_zip64()];
    let path = scratch("zip_archive").join("inputs.zip");
    let images = Arc::new(known_images().clone());
    check(
        &Target::new("zip_archive", seeds, move |data| {
            std::fs::write(&path, data).expect("write the zip");
            let found =
                match discover::discover(std::slice::from_ref(&path), &discover::Limits::default())
                {
                    Ok(found) => found,
                    Err(err) => return Outcome::Rejected(err.to_string()),
                };
            let mut outcome = with_parts(Outcome::Accepted, &found.quarantined);
            let mut reader = FileReader::default();
            // As ingest reads them: in chunks bounded by the sizes the archive declares.
            let chunks = discover::chunks(&found.files, 2);
            if chunks.iter().map(|c| c.len()).sum::<usize>() != found.files.len() {
                return Outcome::Broken("the chunks lose files".into());
            }
            let contents = discover::read_all(&mut reader, &found.files);
            for (file, bytes) in found.files.iter().zip(contents) {
                let bytes = match bytes {
                    Ok(bytes) => bytes,
                    Err(reason) => {
                        outcome = outcome.and(Outcome::Rejected(reason));
                        continue;
                    }
                };
                let parsed = match file.kind {
                    Kind::Report => reports::parse(file, bytes).map(|row| batch(&[row])),
                    Kind::SceneGraph => imagenome::parse(file, &bytes, &images)
                        .map(|unit| with_parts(batch(&unit.rows), &unit.quarantined)),
                    Kind::Cxas => cxas::parse(file, &bytes, &images).map(|units| {
                        units.iter().fold(Outcome::Accepted, |o, unit| {
                            with_parts(o.and(batch(&unit.rows)), &unit.quarantined)
                        })
                    }),
                    Kind::Metadata | Kind::Split | Kind::Labels(_) => {
                        // The CSV reader reads members itself (through a FileReader).
                        Ok(zip_csv(file, &mut reader))
                    }
                };
                outcome = outcome.and(parsed.unwrap_or_else(|record| rejected(&record)));
            }
            outcome
        })
        .with_dictionary(DICTIONARY)
        .with_max_len(512 << 10)
        .with_fields(zip_fields),
    );
}

/// A CSV member of a zip, read as ingest reads it.
fn zip_csv(file: &InputFile, reader: &mut FileReader) -> Outcome {
    let required: &[&str] = match file.kind {
        Kind::Metadata => jpg_csv::METADATA_COLUMNS,
        Kind::Split => jpg_csv::SPLIT_COLUMNS,
        _ => &["subject_id", "study_id"],
    };
    let mut input = match CsvInput::open(file, reader, Table::Splits, required) {
        Ok(input) => input,
        Err(record) => return rejected(&record),
    };
    let mut outcome = Outcome::Accepted;
    while let Some(row) = input.next_row() {
        match row {
            Ok(row) if file.kind == Kind::Split => {
                if let Err(reason) = jpg_csv::split_row(&input, &row) {
                    outcome = outcome.and(Outcome::Rejected(reason));
                }
            }
            Ok(_) => {}
            Err(record) => outcome = outcome.and(rejected(&record)),
        }
    }
    outcome
}
