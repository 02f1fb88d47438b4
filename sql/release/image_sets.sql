-- Per study of release_images: its split (a study's split is its images') and its image ids,
-- the images every per-image structure of the study keeps. Studies without such an image
-- (e.g. no frontal one) have no row and are left out of the release.
SELECT patient_id, study_id, min(split) AS split, array_agg(image_id ORDER BY image_id) AS image_ids
FROM release_images
GROUP BY patient_id, study_id
