//! Untrusted corpora: forged archive sizes, oversized reports, zip bombs, symbolic links and
//! inputs with too many files end in `quarantine` with what they are, and never stop the valid
//! studies beside them from being committed.

use std::io::Write;
use std::path::Path;

use cxrlake_ingest::{IngestOptions, Limits, ingest};

use crate::common::{QuarantineRow, corpus, count, lake, quarantine};

const STUDIES: usize = 12;

/// Ingests `inputs` within `limits`; the run must succeed (not strict).
async fn ingest_within(
    inputs: Vec<std::path::PathBuf>,
    limits: Limits,
) -> (tempfile::TempDir, cxrlake_lake::Lake, Vec<QuarantineRow>) {
    let (dir, lake) = lake().await;
    let options = IngestOptions::new(inputs).with_limits(limits);
    let summary = ingest(&lake, &options).await.expect("ingest");
    assert!(!summary.failed(), "{summary}");
    let rows = quarantine(&lake).await;
    assert_eq!(summary.quarantined(), rows.len() as u64, "{summary}");
    (dir, lake, rows)
}

/// A zip of stored members whose central directory declares each member's size as `declared`
/// (ZIP64), written by hand: the zip writers refuse to forge it.
fn forged_zip64(members: &[(&str, &[u8])], declared: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut directory = Vec::new();
    for (name, data) in members {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let offset = out.len() as u32;
        let zip64 = |uncompressed: u64| {
            let mut extra = Vec::new();
            extra.extend(1u16.to_le_bytes());
            extra.extend(16u16.to_le_bytes());
            extra.extend(uncompressed.to_le_bytes());
            extra.extend((data.len() as u64).to_le_bytes());
            extra
        };
        let common = |out: &mut Vec<u8>| {
            out.extend(0u16.to_le_bytes()); // flags
            out.extend(0u16.to_le_bytes()); // stored
            out.extend(0u16.to_le_bytes()); // time
            out.extend(0x21u16.to_le_bytes()); // date: 1980-01-01
            out.extend(crc.sum().to_le_bytes());
            out.extend(u32::MAX.to_le_bytes()); // sizes in the ZIP64 field
            out.extend(u32::MAX.to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(20u16.to_le_bytes());
        };
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(45u16.to_le_bytes());
        common(&mut out);
        out.extend(name.as_bytes());
        out.extend(zip64(data.len() as u64));
        out.extend(*data);

        directory.extend(0x0201_4b50u32.to_le_bytes());
        directory.extend(45u16.to_le_bytes());
        directory.extend(45u16.to_le_bytes());
        common(&mut directory);
        directory.extend(0u16.to_le_bytes()); // comment
        directory.extend(0u16.to_le_bytes()); // disk
        directory.extend(0u16.to_le_bytes()); // internal attributes
        directory.extend(0u32.to_le_bytes()); // external attributes
        directory.extend(offset.to_le_bytes());
        directory.extend(name.as_bytes());
        directory.extend(zip64(declared));
    }
    let (start, size) = (out.len() as u32, directory.len() as u32);
    out.extend(directory);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend((members.len() as u16).to_le_bytes());
    out.extend((members.len() as u16).to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// A deflated zip of `members`.
fn zip_of(path: &Path, members: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).expect("create"));
    let deflated = zip::write::SimpleFileOptions::default().large_file(true);
    for (name, data) in members {
        zip.start_file(*name, deflated).expect("start");
        zip.write_all(data).expect("write");
    }
    zip.finish().expect("finish");
}

/// Two members declaring 2^63 bytes each once added up past u64 (a panic in a debug build, and
/// the valid studies beside the archive were lost).
#[tokio::test]
async fn forged_zip64_sizes_are_quarantined_and_the_studies_beside_them_committed() {
    let (_dir, synth) = corpus(STUDIES, 1, false);
    let report = b"FINDINGS: No effusion.".as_slice();
    let forged = forged_zip64(
        &[
            ("files/p10/p10000901/s50000901.txt", report),
            ("files/p10/p10000902/s50000902.txt", report),
        ],
        1 << 63,
    );
    std::fs::write(synth.out.join("forged.zip"), forged).expect("write");

    let (_lake_dir, lake, rows) = ingest_within(vec![synth.out.clone()], Limits::default()).await;
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        STUDIES as i64
    );
    assert!(!rows.is_empty(), "the forged members are quarantined");
    for row in &rows {
        assert!(row.source.contains("forged.zip"), "{row:?}");
        assert!(
            row.reason.contains("9223372036854775808 bytes")
                || row.reason.starts_with("unreadable zip"),
            "{row:?}"
        );
    }
}

#[tokio::test]
async fn an_oversized_report_and_zip_bombs_are_quarantined_with_their_sizes() {
    let (_dir, synth) = corpus(STUDIES, 1, false);
    let root = &synth.out;
    let big = root.join("files/p10/p10000903/s50000903.txt");
    std::fs::create_dir_all(big.parent().expect("folder")).expect("mkdir");
    std::fs::write(&big, "FINDINGS: ".repeat(200_000)).expect("write"); // 2 MB
    // 20 MB of NULs as a report (deflated to ~20 kB) and 30 MB of spaces as a scene graph: the
    // scene graph is under ingest_max_file_bytes but 1,000 times its compressed size.
    zip_of(
        &root.join("bombs.zip"),
        &[
            ("files/p10/p10000904/s50000904.txt", &vec![0u8; 20 << 20]),
            (
                "scene_graph/0a-1b-2c-3d-4e_SceneGraph.json",
                &vec![b' '; 30 << 20],
            ),
        ],
    );

    let (_lake_dir, lake, rows) = ingest_within(vec![root.clone()], Limits::default()).await;
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        STUDIES as i64
    );
    let reason = |needle: &str| {
        rows.iter()
            .find(|r| r.source.contains(needle))
            .unwrap_or_else(|| panic!("no quarantine row for {needle}: {rows:?}"))
            .reason
            .clone()
    };
    assert_eq!(rows.len(), 3, "{rows:?}");
    let report = reason("s50000903.txt");
    assert!(
        report.starts_with("2000000 bytes, more than ingest_max_report_bytes = 1048576"),
        "{report}"
    );
    let nuls = reason("s50000904.txt");
    assert!(
        nuls.starts_with("20971520 bytes, more than ingest_max_report_bytes = 1048576"),
        "{nuls}"
    );
    let bomb = reason("SceneGraph.json");
    assert!(
        bomb.contains("a zip bomb (ingest_max_zip_ratio = 100)"),
        "{bomb}"
    );

    // The limits are settings: raised, the big report is read.
    let raised = Limits {
        max_report_bytes: 4 << 20,
        ..Limits::default()
    };
    let (_lake_dir, lake, _) = ingest_within(vec![root.clone()], raised).await;
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM reports WHERE study_id = 's50000903'"
        )
        .await,
        1
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symbolic_links_stay_inside_the_input_folder_and_cycles_end() {
    use std::os::unix::fs::symlink;
    let (dir, synth) = corpus(STUDIES, 1, false);
    let root = &synth.out;
    let files = root.join("files");
    // A link back up (a cycle), a link to /, a report-named link to a file outside the input
    // and one to a file inside it under another name (as git-annex lays out a corpus).
    symlink("..", files.join("loop")).expect("link");
    symlink("/", files.join("everything")).expect("link");
    let outside = dir.path().join("not-a-report.txt");
    std::fs::write(&outside, "a local file that must not reach the lake").expect("write");
    let patient = files.join("p10/p10000905");
    std::fs::create_dir_all(&patient).expect("mkdir");
    symlink(&outside, patient.join("s50000905.txt")).expect("link");
    let annex = files.join(".annex");
    std::fs::create_dir_all(&annex).expect("mkdir");
    std::fs::write(annex.join("SHA256-abc"), "FINDINGS: No pneumothorax.").expect("write");
    symlink("../../.annex/SHA256-abc", patient.join("s50000906.txt")).expect("link");

    let started = std::time::Instant::now();
    let (_lake_dir, lake, rows) = ingest_within(vec![root.clone()], Limits::default()).await;
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert_eq!(
        count(&lake, "SELECT count(*) FROM reports").await,
        STUDIES as i64 + 1,
        "the real corpus once (not again through `loop`) and the linked report"
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM reports WHERE study_id = 's50000906' \
             AND source_path = 'files/.annex/SHA256-abc' AND text = 'FINDINGS: No pneumothorax.'"
        )
        .await,
        1,
        "a link is read from its target, and the source is the file read"
    );
    assert_eq!(
        count(
            &lake,
            "SELECT count(*) FROM reports WHERE study_id = 's50000905'"
        )
        .await,
        0
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    let real_outside = std::fs::canonicalize(&outside).expect("canonical");
    for (name, target) in [
        ("everything", "/".to_string()),
        ("s50000905.txt", real_outside.display().to_string()),
    ] {
        let row = rows
            .iter()
            .find(|r| r.source.ends_with(name))
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"));
        assert!(
            row.reason.starts_with(&format!(
                "a symbolic link to '{target}', outside the input folder"
            )),
            "{row:?}"
        );
    }
}

#[tokio::test]
async fn an_input_with_too_many_files_is_quarantined_whole_and_the_others_ingested() {
    let (_dir, synth) = corpus(STUDIES, 1, false);
    let (_small_dir, small) = corpus(2, 7, false);
    let limits = Limits {
        max_files: 12,
        ..Limits::default()
    };
    // The small corpus has 2 reports plus CSVs and scene graphs, under 12 files in all.
    let (_lake_dir, lake, rows) =
        ingest_within(vec![synth.out.clone(), small.out.clone()], limits).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].source, synth.out.display().to_string());
    assert!(
        rows[0]
            .reason
            .starts_with("more than ingest_max_files = 12 files: not ingested"),
        "{}",
        rows[0].reason
    );
    assert_eq!(count(&lake, "SELECT count(*) FROM reports").await, 2);
}
