-- Each study's sXXXXXXXX.metadata.json in the scene graph zip: split, procedure, date and its
-- images (of the release: frontal only in the subsets) with view position and size.
SELECT i.patient_id, i.study_id, s.split, min(i.procedure) AS procedure,
       min(i.study_date) AS study_date,
       array_agg(named_struct('image_id', i.image_id, 'view_position', i."view",
                              'dicom_view_position', i.view_position,
                              'width', i."columns", 'height', i."rows") ORDER BY i.image_id) AS images
FROM release_images i JOIN release_studies s ON s.study_id = i.study_id
GROUP BY i.patient_id, i.study_id, s.split
