-- localize: boxes for every localized region of the reference definitions on every image
-- (paper 000, E.1.1). Inputs: images, cxas_masks, imagenome_boxes. Output: region_boxes, one row
-- per image × localized region. localize_regions() applies each region's recipe (CXAS mask box
-- first, ImaGenome box next, bilateral pairs unfused, super-boxes of children, mask or box
-- unions/intersections), drops boxes under the minimum area and falls back to coarser regions.
-- Each mask's box is the one ingest stored: only masks that a mask-space union or intersection
-- needs are decoded.

-- @table region_boxes
WITH masks AS (
    SELECT image_id,
           array_agg(named_struct('class_name', class_name, 'rle_counts', rle_counts,
                                  'bbox', bbox)) AS masks
    FROM cxas_masks
    GROUP BY image_id
),
boxes AS (
    SELECT image_id,
           array_agg(named_struct('bbox_name', bbox_name, 'bbox', bbox)) AS boxes
    FROM imagenome_boxes
    GROUP BY image_id
),
located AS (
    SELECT i.patient_id,
           i.image_id,
           i.study_id,
           unnest(localize_regions(m.masks, b.boxes, i.rows, i.columns)) AS r
    FROM images i
    LEFT JOIN masks m ON m.image_id = i.image_id
    LEFT JOIN boxes b ON b.image_id = i.image_id
)
-- unnest(r) flattens each localized region into the table's columns.
SELECT patient_id, image_id, study_id, unnest(r)
FROM located
