//! map → graph → balance → qa on a small synthetic corpus: every template asks questions,
//! answers are well formed (a main answer, parents before children, observation ids of the
//! study), yes/no answers agree with the scene graph, sampling follows qa_balance and a rerun
//! is identical.

use cxrlake_pipeline::RunMode;
use cxrlake_templates::Templates;

use crate::common::{localized_lake, number, pipeline, query, run_stage, strings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qa_generates_every_template_with_well_formed_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, defs) = localized_lake(dir.path(), 40, 5).await;
    run_stage(&lake, "map", &[]).await;
    run_stage(&lake, "graph", &[]).await;
    // Without the balance stage, qa says what to run first.
    let err = pipeline(&lake, &[])
        .await
        .run_stage("qa", RunMode::Write)
        .await
        .expect_err("qa before balance");
    assert!(err.to_string().contains("cxrlake run balance"), "{err}");
    let templates = Templates::embedded(&defs).expect("templates");
    let balanced = run_stage(&lake, "balance", &[]).await;
    assert!(balanced.rows("qa_balance") > 20, "{balanced}");
    let generated = run_stage(&lake, "qa", &[("chunk_patients", "3")]).await;
    assert!(generated.chunks >= 2, "{generated}");
    assert!(generated.rows("qa") > 40 * 50, "{generated}");

    // Every template of tables 13–15 (and the indication) asks questions.
    let types = strings(
        &lake,
        "SELECT DISTINCT question_type FROM qa ORDER BY question_type",
    )
    .await;
    let all: Vec<String> = templates.templates.iter().map(|t| t.id.clone()).collect();
    assert_eq!(types, all);
    // The indication question is asked once per study with an indication node.
    assert_eq!(
        number(&lake, "SELECT count(*) FROM qa WHERE question_type = 'A_indication'").await,
        number(
            &lake,
            "SELECT count(*) FROM scene_graphs WHERE indication['answer_for_indication'] IS NOT NULL"
        )
        .await
    );

    let simple = [
        "SELECT count(*) FROM qa WHERE question_id NOT LIKE question_type || '_%' \
         OR length(question_id) <> length(question_type) + 4",
        "SELECT count(*) FROM (SELECT study_id, question_id FROM qa \
         GROUP BY study_id, question_id HAVING count(*) > 1)",
        "SELECT count(*) FROM qa WHERE question IS NULL OR question = '' OR question LIKE '%{%'",
        "SELECT count(*) FROM (SELECT study_id, question_id, unnest(answers) AS a FROM qa) \
         WHERE a['parent_answer_id'] IS NOT NULL AND a['parent_answer_id'] >= a['answer_id']",
        "SELECT count(*) FROM (SELECT study_id, unnest(obs_ids) AS id FROM qa) q \
         LEFT JOIN (SELECT study_id, unnest(observations)['obs_id'] AS id FROM scene_graphs) o \
         ON o.study_id = q.study_id AND o.id = q.id WHERE o.id IS NULL AND q.id <> 'OIND'",
        "SELECT count(*) FROM (SELECT unnest(answers) AS a FROM qa) \
         WHERE a['text'] IS NULL OR a['text'] = '' OR a['text'] LIKE '%{%'",
        "SELECT count(*) FROM (SELECT study_id, question_id, \
         bool_or(a['answer_type'] = 'main_answer') AS has_main, \
         bool_or(a['from_report']) AS any_report, bool_or(NOT a['from_report']) AS any_template, \
         min(contains_report_answers::int) = 1 AS report, \
         min(contains_template_answers::int) = 1 AS template \
         FROM (SELECT study_id, question_id, contains_report_answers, contains_template_answers, \
               unnest(answers) AS a FROM qa) GROUP BY study_id, question_id) \
         WHERE NOT has_main OR any_report <> report OR any_template <> template",
    ];
    for check in simple {
        assert_eq!(number(&lake, check).await, 0, "{check}");
    }

    // Yes/no answers follow the scene graph: "Is there any evidence of X?" is answered yes
    // exactly when a positive observation mentions X.
    let disagreements = number(
        &lake,
        "WITH d02 AS ( \
           SELECT study_id, trim(both '\"' from variables[1]['value_json']) AS finding, \
                  answers[1]['text'] AS main FROM qa WHERE question_type = 'D02_has_finding'), \
         pos AS ( \
           SELECT DISTINCT study_id, f FROM ( \
             SELECT study_id, p, unnest(array_concat(e, ep)) AS f FROM ( \
               SELECT study_id, o['positiveness'] AS p, o['obs_entities'] AS e, \
                      o['obs_entities_parents'] AS ep \
               FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs))) \
           WHERE p = 'pos') \
         SELECT count(*) FROM d02 LEFT JOIN pos ON pos.study_id = d02.study_id AND pos.f = d02.finding \
         WHERE (pos.f IS NULL) <> (d02.main LIKE 'No%')",
    )
    .await;
    assert_eq!(
        disagreements, 0,
        "D02 yes/no disagrees with the scene graphs"
    );

    // The same inputs give the same questions (hash-based sampling and phrasing).
    let before = query(
        &lake,
        "SELECT study_id, question_id, question FROM qa ORDER BY study_id, question_id",
    )
    .await;
    run_stage(&lake, "qa", &[]).await;
    let after = query(
        &lake,
        "SELECT study_id, question_id, question FROM qa ORDER BY study_id, question_id",
    )
    .await;
    assert_eq!(
        datafusion::arrow::util::pretty::pretty_format_batches(&before)
            .expect("format")
            .to_string(),
        datafusion::arrow::util::pretty::pretty_format_batches(&after)
            .expect("format")
            .to_string()
    );

    // Sampling probabilities follow the counts.
    let rates = &templates.strategies;
    let off = number(
        &lake,
        &format!(
            "SELECT count(*) FROM qa_balance WHERE abs(sample_probability - \
             (CASE kind WHEN 'region' THEN {} ELSE {} END) * pos_studies / \
             (pos_studies + neg_studies + 1.0)) > 1e-9",
            rates.region_abnormal.rate, rates.finding.rate
        ),
    )
    .await;
    assert_eq!(off, 0);
}
