-- answer_image_metadata (index patient_id, study_id, question_id, answer_id, image_id): one row
-- per answer part and image it is localized on: regions, boxes, masks, fallback and quality.
WITH parts AS (
    SELECT patient_id, study_id, question_id, split, a['answer_id'] + 1 AS answer_id,
           unnest(a['localization']) AS l
    FROM (SELECT patient_id, study_id, question_id, split, unnest(answers) AS a FROM release_qa)
)
SELECT split,
       coalesce(list_length(l['missing_localization']), 0) > 0 AS "answer_img.is_localization_missing",
       CAST(coalesce(list_length(l['localization_reference_ids']), 0) AS BIGINT) AS "answer_img.num_regions",
       CAST(coalesce(list_length(l['bboxes']), 0) AS BIGINT) AS "answer_img.num_bboxes",
       coalesce(list_length(l['bboxes']), 0) > 0 AS "answer_img.has_bboxes",
       coalesce(l['localization_quality'] = 'BOX_AND_MASK_LOCALIZATION', false) AS "answer_img.has_masks",
       l['is_fallback'] AS "answer_img.is_fallback",
       quality_value('localization_quality', l['localization_quality']) AS "answer_img.quality.localization_quality",
       patient_id, study_id, question_id, answer_id, l['image_id'] AS image_id
FROM parts
