-- The images of a release: every image, or only the frontal ones ($1 = true) for the FT, PT,
-- A+ and A++ subsets (paper 3.3: non-frontal images are excluded from them).
SELECT image_id, patient_id, study_id, "view", view_position, "rows", "columns", study_date,
       procedure, split
FROM images
WHERE is_frontal OR NOT $1
