-- Each study's sXXXXXXXX.metadata.json in the scene graph zip: split, procedure, date and its
-- images (of the release: frontal only in the subsets) with view position and size.
-- The texts are cast to plain Utf8 before array_agg: aggregated string views keep their whole
-- input buffers, and combining the groups copied those buffers once per study (24 GB at 18,000
-- studies).
SELECT i.patient_id, i.study_id, s.split, min(i.procedure) AS procedure,
       min(i.study_date) AS study_date,
       array_agg(named_struct('image_id', arrow_cast(i.image_id, 'Utf8'),
                              'view_position', arrow_cast(coalesce(i."view", 'lateral'), 'Utf8'),
                              'dicom_view_position', arrow_cast(i.view_position, 'Utf8'),
                              'width', i."columns", 'height', i."rows") ORDER BY i.image_id) AS images
FROM release_images i JOIN release_studies s ON s.study_id = i.study_id
GROUP BY i.patient_id, i.study_id, s.split
