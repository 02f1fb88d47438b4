-- patient_metadata (index patient_id): the patient's split (MIMIC-CXR-JPG splits by patient;
-- the first of its studies' splits, should they differ), studies, images and questions in the
-- release, and the days between their first and last study.
WITH studies AS (
    SELECT s.patient_id, s.study_id, s.split, min(i.study_date) AS study_date,
           count(i.image_id) AS images
    FROM release_studies s JOIN release_images i ON i.study_id = s.study_id
    GROUP BY s.patient_id, s.study_id, s.split
), questions AS (
    SELECT patient_id, count(*) AS questions FROM release_qa GROUP BY patient_id
)
SELECT min(s.split) AS split,
       count(*) AS "patient.total_studies",
       sum(s.images) AS "patient.total_images",
       max(q.questions) AS "patient.total_questions",
       CAST((to_unixtime(to_timestamp(max(s.study_date), '%Y%m%d'))
             - to_unixtime(to_timestamp(min(s.study_date), '%Y%m%d'))) / 86400 AS BIGINT)
           AS "patient.total_study_timespan",
       s.patient_id
FROM studies s JOIN questions q ON q.patient_id = s.patient_id
GROUP BY s.patient_id
ORDER BY s.patient_id
