-- The studies of the release: those with a question in release_qa, with their split and images.
SELECT s.patient_id, s.study_id, s.split, s.image_ids
FROM image_sets s
WHERE s.study_id IN (SELECT study_id FROM release_qa)
