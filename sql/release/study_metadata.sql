-- study_metadata (index patient_id, study_id): split, procedure, counts and the scene graph's
-- extraction quality (levels as integers, quality_mappings.csv; the rating as <rank>_<grade>).
WITH images AS (
    SELECT study_id, count(*) AS images, min(study_date) AS study_date, min(procedure) AS procedure
    FROM release_images GROUP BY study_id
), questions AS (
    SELECT study_id, count(*) AS questions FROM release_qa GROUP BY study_id
)
SELECT s.split AS split,
       i.procedure AS "study.procedure",
       i.study_date AS "study.study_date",
       i.images AS "study.num_images",
       CAST(coalesce(list_length(g.observations), 0) AS BIGINT) AS "study.num_observations",
       q.questions AS "study.num_questions",
       release_rating(extraction_rating(g.study_quality)) AS "study.quality.extraction_rating",
       rating_rank(extraction_rating(g.study_quality)) AS "study.quality.extraction_rating_rank",
       quality_value('region_extract_quality', g.study_quality['region_extract_quality']) AS "study.quality.region_extract_quality",
       quality_value('entity_extract_quality', g.study_quality['entity_extract_quality']) AS "study.quality.entity_extract_quality",
       quality_value('sentence_name_quality', g.study_quality['sentence_name_quality']) AS "study.quality.sentence_name_quality",
       quality_value('change_quality', g.study_quality['change_quality']) AS "study.quality.change_quality",
       quality_value('general_issue_level', g.study_quality['general_issue_level']) AS "study.quality.general_issue_level",
       s.patient_id, s.study_id
FROM release_studies s
JOIN images i ON i.study_id = s.study_id
JOIN questions q ON q.study_id = s.study_id
LEFT JOIN release_scene_graphs g ON g.study_id = s.study_id
ORDER BY s.patient_id, s.study_id
