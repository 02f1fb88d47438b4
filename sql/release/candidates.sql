-- The lake's qa rows of the studies in image_sets, without the per-image entries of other
-- images (answer-part localizations, question_img_localization_quality), with the study's
-- split. The subsets (all.sql, ft.sql, …) select from this view.
SELECT q.patient_id, q.study_id, q.question_id, q.question_type, q.question_strategy,
       q.variables, q.obs_ids, q.contains_report_answers, q.contains_template_answers,
       q.extraction_quality,
       keep_images(q.question_img_localization_quality, s.image_ids) AS question_img_localization_quality,
       q.question,
       keep_images(q.answers, s.image_ids) AS answers,
       q.question_quality, q.rating, q.rating_rank, q.extractor, q.embedder, q.judge, s.split
FROM qa q JOIN image_sets s ON q.study_id = s.study_id
