//! `export_release` over a pipeline-built lake whose `qa` got a hash-derived rating (the grade
//! stage is not there yet): the FT subset's counts equal the lake's, non-frontal images are gone
//! from every table and file, the zips hold valid D.1/D.2 JSON, the q1M sample is reproducible
//! and grows monotonically with its size, and bad requests are refused with what to do.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use cxrlake_export::{
    ExportError, ReleaseExport, ReleaseFormat, Subset, export_release, validate_qa,
    validate_scene_graph,
};
use cxrlake_lake::Lake;
use cxrlake_schemas::Rating;
use datafusion::arrow::array::{AsArray, Int8Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use serde_json::Value;

use crate::qa::qa_lake;

/// Rewrites `qa` with `rating` = one of the seven ratings by `hash(5, study, question)`, and its
/// `rating_rank`.
pub async fn grade(lake: &Lake) {
    let ctx = lake.session().await.expect("session");
    let batches = ctx
        .sql("SELECT *, sample_hash(5, study_id, question_id) AS h FROM qa")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("read qa");
    let mut graded = Vec::new();
    for batch in batches {
        let hashes = batch.column_by_name("h").expect("h");
        let hashes = hashes.as_primitive::<Float64Type>();
        let ratings: Vec<Rating> = hashes
            .values()
            .iter()
            .map(|h| Rating::ALL[((h * 7.0) as usize).min(6)])
            .collect();
        let texts: StringArray = ratings.iter().map(|r| Some(r.as_str())).collect();
        let ranks: Int8Array = ratings.iter().map(|r| Some(r.rank())).collect();
        let keep: Vec<usize> = (0..batch.num_columns() - 1).collect();
        let batch = batch.project(&keep).expect("project");
        let schema = cxrlake_export::release::portable_schema(&batch.schema());
        let mut columns = cxrlake_export::release::portable_batch(&batch, &schema)
            .expect("portable")
            .columns()
            .to_vec();
        columns[schema.index_of("rating").expect("rating")] = std::sync::Arc::new(texts);
        columns[schema.index_of("rating_rank").expect("rank")] = std::sync::Arc::new(ranks);
        graded.push(RecordBatch::try_new(schema, columns).expect("graded batch"));
    }
    lake.write("qa")
        .overwrite()
        .execute(graded)
        .await
        .expect("write graded qa");
}

async fn strings(ctx: &SessionContext, sql: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for batch in ctx.sql(sql).await.expect(sql).collect().await.expect(sql) {
        let column = cast(batch.column(0), &DataType::Utf8).expect("utf8");
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    out
}

async fn number(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.expect(sql).collect().await.expect(sql);
    let column = cast(batches[0].column(0), &DataType::Int64).expect("int64");
    column.as_primitive::<Int64Type>().value(0)
}

/// A context over the Parquet files of a release folder, tables named by file stem.
async fn files_context(dir: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    for name in ["qa", "scene_graphs"] {
        let path = dir.join(format!("{name}.parquet"));
        ctx.register_parquet(
            name,
            path.to_str().expect("utf-8"),
            ParquetReadOptions::default(),
        )
        .await
        .expect("register");
    }
    for sub in ["", "q1M/"] {
        for name in cxrlake_export::release::metadata_tables() {
            let path = dir.join(format!("metadata/{sub}{name}.parquet"));
            let table = format!("{}{name}", if sub.is_empty() { "" } else { "q1m_" });
            ctx.register_parquet(
                &table,
                path.to_str().expect("utf-8"),
                ParquetReadOptions::default(),
            )
            .await
            .expect("register");
        }
    }
    ctx
}

/// Every member of a zip as `(name, JSON)`.
fn members(path: &Path) -> Vec<(String, Value)> {
    let mut archive =
        zip::ZipArchive::new(std::fs::File::open(path).expect("zip")).expect("archive");
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).expect("member");
            let mut text = String::new();
            file.read_to_string(&mut text).expect("read");
            (
                file.name().to_string(),
                serde_json::from_str(&text).expect("json"),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ft_release_keeps_a_rated_frontal_questions_in_every_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = qa_lake(dir.path(), 16).await;
    grade(&lake).await;
    let lake_ctx = lake.session().await.expect("session");
    let frontal = strings(&lake_ctx, "SELECT image_id FROM images WHERE is_frontal").await;
    let lateral = strings(
        &lake_ctx,
        "SELECT image_id FROM images WHERE NOT is_frontal",
    )
    .await;
    assert!(!lateral.is_empty(), "the corpus has lateral images");
    let expected = number(
        &lake_ctx,
        "SELECT count(*) FROM qa WHERE rating >= 'A' \
         AND study_id IN (SELECT study_id FROM images WHERE is_frontal)",
    )
    .await;
    let all = number(&lake_ctx, "SELECT count(*) FROM qa").await;
    assert!(expected > 100 && expected < all, "{expected} of {all}");

    let out = dir.path().join("ft");
    let export = ReleaseExport::new(&out)
        .with_subset(Subset::Ft)
        .with_sample(40);
    let summary = export_release(&lake, &export).await.expect("export");
    let part = &summary.parts[0];
    assert_eq!(part.questions as i64, expected, "{summary}");
    assert_eq!(part.rows("question_metadata") as i64, expected);

    let files = files_context(&out).await;
    assert_eq!(number(&files, "SELECT count(*) FROM qa").await, expected);
    let below = "SELECT count(*) FROM question_metadata WHERE \"question.quality.rating_rank\" < 4 \
                 OR \"question.quality.rating\" NOT IN ('4_A', '5_A+', '6_A++')";
    assert_eq!(number(&files, below).await, 0);
    let parts = number(&files, "SELECT sum(cardinality(answers)) FROM qa").await;
    assert_eq!(part.rows("answer_metadata") as i64, parts);

    // Only frontal images, in every per-image structure.
    let images = [
        "SELECT image_id FROM image_metadata",
        "SELECT image_id FROM answer_image_metadata",
        "SELECT image_id FROM question_image_metadata",
        "SELECT l['image_id'] FROM (SELECT unnest(a['localization']) AS l FROM \
         (SELECT unnest(answers) AS a FROM qa))",
        "SELECT l['image_id'] FROM (SELECT unnest(study_img_localization_quality) AS l \
         FROM scene_graphs)",
        "SELECT l['image_id'] FROM (SELECT unnest(o['localization']) AS l FROM \
         (SELECT unnest(observations) AS o FROM scene_graphs))",
    ];
    for sql in images {
        let ids = strings(&files, sql).await;
        assert!(!ids.is_empty(), "{sql}");
        assert!(
            ids.is_subset(&frontal),
            "{sql}: {:?}",
            ids.difference(&frontal)
        );
    }
    let views = strings(&files, "SELECT \"img.view_position\" FROM image_metadata").await;
    assert_eq!(views, BTreeSet::from(["frontal".to_string()]));

    // The zips: valid D.2 / D.1 JSON, frontal images only, release codes.
    let mut questions = 0;
    for (name, value) in members(&out.join("qa.zip")) {
        assert!(
            name.starts_with("qa/p1") && name.ends_with(".qa.json"),
            "{name}"
        );
        assert_eq!(validate_qa(&value), Vec::<String>::new(), "{name}");
        for question in value["questions"].as_array().expect("questions") {
            questions += 1;
            let rating = question["question_quality"]["rating"]
                .as_str()
                .expect("rating");
            assert!(["4_A", "5_A+", "6_A++"].contains(&rating), "{rating}");
            for image in question["question_img_localization_quality"]
                .as_object()
                .expect("dict")
                .keys()
            {
                assert!(frontal.contains(image), "{name}: {image}");
            }
        }
    }
    assert_eq!(questions, expected);
    let scene = members(&out.join("scene_graph.zip"));
    let studies = part.rows("study_metadata") as usize;
    let graphs: Vec<_> = scene
        .iter()
        .filter(|(name, _)| name.ends_with(".scene_graph.json"))
        .collect();
    assert_eq!(graphs.len(), studies);
    for (name, value) in &graphs {
        assert!(name.starts_with("scene_data/p1"), "{name}");
        assert_eq!(validate_scene_graph(value), Vec::<String>::new(), "{name}");
    }
    let study_files = scene
        .iter()
        .filter(|(name, _)| name.ends_with(".metadata.json"));
    for (name, value) in study_files.clone() {
        for image in value["images"].as_array().expect("images") {
            assert_eq!(image["view_position"], "frontal", "{name}");
        }
    }
    assert_eq!(study_files.count(), studies);

    // The q1M sample: about the asked size, reproducible, and a larger one holds it.
    let sampled = strings(
        &files,
        "SELECT study_id || question_id FROM q1m_question_metadata",
    )
    .await;
    assert!((15..=80).contains(&sampled.len()), "{}", sampled.len());
    assert_eq!(part.sample_questions as usize, sampled.len());
    let again = dir.path().join("ft_again");
    export_release(
        &lake,
        &ReleaseExport::new(&again)
            .with_subset(Subset::Ft)
            .with_sample(40)
            .with_format(ReleaseFormat::Parquet),
    )
    .await
    .expect("again");
    let again = files_context(&again).await;
    let resampled = strings(
        &again,
        "SELECT study_id || question_id FROM q1m_question_metadata",
    )
    .await;
    assert_eq!(resampled, sampled);
    let larger = dir.path().join("ft_larger");
    export_release(
        &lake,
        &ReleaseExport::new(&larger)
            .with_subset(Subset::Ft)
            .with_sample(44)
            .with_format(ReleaseFormat::Parquet),
    )
    .await
    .expect("larger");
    let larger = files_context(&larger).await;
    let grown = strings(
        &larger,
        "SELECT study_id || question_id FROM q1m_question_metadata",
    )
    .await;
    assert!(
        grown.is_superset(&sampled),
        "a larger p only adds questions"
    );
    assert!(
        grown.len() - sampled.len() < 20,
        "{} added",
        grown.len() - sampled.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_release_requests_say_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = qa_lake(dir.path(), 4).await;
    // Not graded: every rating is NULL, so FT is empty.
    let err = export_release(
        &lake,
        &ReleaseExport::new(dir.path().join("ft")).with_subset(Subset::Ft),
    )
    .await
    .expect_err("no rated question");
    assert!(
        matches!(err, ExportError::EmptyRelease { subset: "ft", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("GROUP BY 1"), "{err}");

    let export = ReleaseExport::new(dir.path().join("bad")).with_filter("no_such_column = 1");
    let err = export_release(&lake, &export)
        .await
        .expect_err("bad filter");
    assert!(matches!(err, ExportError::Filter { .. }), "{err}");
    let err = ReleaseExport::new("x")
        .with_split("dev")
        .expect_err("bad split");
    assert!(
        err.to_string().contains("use one of train, validate, test"),
        "{err}"
    );

    // The whole tree in PhysioNet layout only: root, exports/A_frontal is empty, so it stops
    // there; with a filter that keeps a split, the root is written with its README counts.
    let out = dir.path().join("all");
    let export = ReleaseExport::new(&out)
        .with_subset(Subset::All)
        .with_format(ReleaseFormat::Physionet);
    let err = export_release(&lake, &export).await.expect_err("FT empty");
    assert!(
        matches!(err, ExportError::EmptyRelease { subset: "ft", .. }),
        "{err}"
    );
    assert!(out.join("qa.zip").exists() && out.join("scene_data.zip").exists());
    assert!(
        !out.join("qa.parquet").exists(),
        "no Parquet in the PhysioNet format"
    );
}
