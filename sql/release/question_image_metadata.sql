-- question_image_metadata (index patient_id, study_id, question_id, image_id): the question's
-- localization quality on each image the release keeps of its study (integer; 9 =
-- NOT_APPLICABLE where it localizes nothing on the image, see candidates.sql), so every question
-- has its image rows.
SELECT split,
       quality_value('localization_quality', l['localization_quality']) AS "question_img.quality.localization_quality",
       patient_id, study_id, question_id, l['image_id'] AS image_id
FROM (SELECT patient_id, study_id, question_id, split,
             unnest(question_img_localization_quality) AS l
      FROM release_qa)
