-- The lake's qa rows of the studies in image_sets, without the per-image entries of other
-- images (answer-part localizations, question_img_localization_quality), with the study's
-- split. The subsets (all.sql, ft.sql, …) select from this view.
--
-- As the release's loaders read them, every question has a localization level on every image
-- the release keeps of its study, and every extraction aspect a level: NOT_APPLICABLE (code 9,
-- rating A++: it does not lower the stored rating) where the lake has none, i.e. an image the
-- question localizes nothing on, a question without observations.
SELECT q.patient_id, q.study_id, q.question_id, q.question_type, q.question_strategy,
       q.variables, q.obs_ids, q.contains_report_answers, q.contains_template_answers,
       named_struct(
           'region_extract_quality', coalesce(q.extraction_quality['region_extract_quality'], 'NOT_APPLICABLE'),
           'entity_extract_quality', coalesce(q.extraction_quality['entity_extract_quality'], 'NOT_APPLICABLE'),
           'sentence_name_quality', coalesce(q.extraction_quality['sentence_name_quality'], 'NOT_APPLICABLE'),
           'change_quality', coalesce(q.extraction_quality['change_quality'], 'NOT_APPLICABLE'),
           'general_issue_level', coalesce(q.extraction_quality['general_issue_level'], 'NOT_APPLICABLE')
       ) AS extraction_quality,
       every_image(q.question_img_localization_quality, s.image_ids, 'NOT_APPLICABLE')
           AS question_img_localization_quality,
       q.question,
       keep_images(q.answers, s.image_ids) AS answers,
       q.question_quality, q.rating, q.rating_rank, q.extractor, q.embedder, q.judge, s.split
FROM qa q JOIN image_sets s ON q.study_id = s.study_id
