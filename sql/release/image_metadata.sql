-- image_metadata (index patient_id, study_id, image_id): view (frontal / lateral), DICOM view
-- position, size in pixels and the study's localization quality on the image (integer). The
-- release knows two views: an oblique or unknown one (NULL `view` in the lake) is `lateral`,
-- i.e. not frontal; `img.dicom_view_position` keeps the DICOM value.
WITH levels AS (
    SELECT study_id, l['image_id'] AS image_id, l['localization_quality'] AS level
    FROM (SELECT study_id, unnest(study_img_localization_quality) AS l FROM release_scene_graphs)
)
SELECT s.split AS split,
       coalesce(i."view", 'lateral') AS "img.view_position",
       i.view_position AS "img.dicom_view_position",
       i."columns" AS "img.width",
       i."rows" AS "img.height",
       quality_value('localization_quality', l.level) AS "img.quality.localization_quality",
       i.patient_id, i.study_id, i.image_id
FROM release_images i
JOIN release_studies s ON s.study_id = i.study_id
LEFT JOIN levels l ON l.study_id = i.study_id AND l.image_id = i.image_id
ORDER BY i.patient_id, i.study_id, i.image_id
