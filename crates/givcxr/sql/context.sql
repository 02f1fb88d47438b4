-- givcxr_context: the region contexts of GIV-CXR (paper 002, supplement section 3.1): per
-- frontal image and GIV-CXR region (refdefs/givcxr/vocabulary.toml), the facts about the region
-- in Chest ImaGenome's attribute syntax (`anatomicalfinding|yes|atelectasis`,
-- `disease|no|pneumonia`, `tubesandlines|yes|chest tube`, `nlp|yes|normal` or
-- `nlp|yes|abnormal`), its texture cues (`texture|yes|opacity`), its report phrases, the
-- clinical findings present (the vocabulary's 28), its box and the patient's split.
-- Inputs: scene_graphs (the study's top-level observations with their regions, on every frontal
-- image of the study), imagenome_boxes (the image's attributes and phrases per box), images,
-- region_boxes (the region's box: its lowest-ranked source region with a box on the image; on a
-- lake without region_boxes, $graph_boxes, a lake imported from the release, the scene graphs'
-- region nodes).
-- Output: givcxr_regions; a region without facts or without a box on the image has no context.
--
-- givcxr_region maps a cxrlake region (or ImaGenome box) to its GIV-CXR region through its
-- nearest source ancestor; givcxr_finding and givcxr_texture read an observation's entity and
-- parents; observations of the normal findings ($normal_findings: "clear lungs", …) state
-- normality, not a finding; givcxr_split draws each patient into one split
-- (cxrlake.givcxr_split, seeded by cxrlake.seed).

-- @step frontal
SELECT image_id,
       patient_id,
       study_id,
       "columns" AS image_width,
       "rows" AS image_height,
       givcxr_split(patient_id, split) AS split
FROM images
WHERE is_frontal

-- @step observations
-- One row per (top-level observation, GIV-CXR region it is located in).
SELECT DISTINCT study_id,
       givcxr_region(r['region']) AS region,
       category || CASE WHEN negative THEN '|no|' ELSE '|yes|' END || entity AS attribute,
       CASE WHEN NOT negative THEN givcxr_finding(array_prepend(entity, parents)) END AS finding,
       CASE WHEN negative THEN make_array('')
            ELSE givcxr_texture(array_prepend(entity, parents), texture) END AS texture,
       phrase
FROM (
    SELECT study_id,
           CASE o['obs_categories'][1]
                WHEN 'ANATOMICAL_FINDING' THEN 'anatomicalfinding'
                WHEN 'DISEASE' THEN 'disease'
                WHEN 'DEVICE' THEN 'tubesandlines'
           END AS category,
           coalesce(o['positiveness'] = 'neg', false) AS negative,
           lower(coalesce(o['obs_entities'][1], o['name'])) AS entity,
           coalesce(o['obs_entities_parents'], make_array('')) AS parents,
           coalesce(o['modifiers']['texture'], make_array('')) AS texture,
           o['summary_sentence'] AS phrase,
           unnest(o['regions']) AS r
    FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
    WHERE o['child_level'] = 0
      AND o['obs_categories'][1] IN ('ANATOMICAL_FINDING', 'DISEASE', 'DEVICE')
      AND NOT array_has(string_to_array($normal_findings, '|'),
                        lower(coalesce(o['obs_entities'][1], o['name'])))
)
WHERE givcxr_region(r['region']) IS NOT NULL

-- @step normal_regions
-- Regions the report calls normal ("The lungs are clear"): their GIV-CXR regions, per study.
SELECT DISTINCT study_id, givcxr_region(r['region']) AS region
FROM (
    SELECT study_id, unnest(o['regions']) AS r
    FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
    WHERE o['child_level'] = 0
      AND array_has(string_to_array($normal_findings, '|'),
                    lower(coalesce(o['obs_entities'][1], o['name'])))
)
WHERE givcxr_region(r['region']) IS NOT NULL

-- @step imagenome
-- The ImaGenome attributes of the frontal images, one row per (box, attribute).
SELECT image_id, region, attribute,
       CASE WHEN split_part(attribute, '|', 2) = 'yes'
                 AND split_part(attribute, '|', 1) IN ('anatomicalfinding', 'disease', 'tubesandlines')
            THEN givcxr_finding(make_array(split_part(attribute, '|', 3))) END AS finding,
       CASE WHEN split_part(attribute, '|', 2) = 'yes'
            THEN givcxr_texture(make_array(split_part(attribute, '|', 3)), make_array(''))
            ELSE make_array('') END AS texture
FROM (
    SELECT b.image_id, givcxr_region(b.bbox_name) AS region, unnest(b.attributes) AS attribute
    FROM imagenome_boxes b
    WHERE b.image_id IN (SELECT image_id FROM frontal) AND givcxr_region(b.bbox_name) IS NOT NULL
)
WHERE split_part(attribute, '|', 1) IN ('anatomicalfinding', 'disease', 'tubesandlines', 'texture',
                                        'nlp')

-- @step facts
-- Every fact about an image's region: its study's observations, its ImaGenome attributes and
-- phrases, the report's normal statements.
SELECT f.image_id, o.region, o.attribute, o.finding, o.texture, o.phrase
FROM observations o
JOIN frontal f ON f.study_id = o.study_id
UNION ALL
SELECT image_id, region, attribute, finding, texture, CAST(NULL AS VARCHAR)
FROM imagenome
UNION ALL
SELECT image_id, givcxr_region(bbox_name), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR),
       make_array(''), phrase
FROM (SELECT image_id, bbox_name, unnest(phrases) AS phrase FROM imagenome_boxes)
WHERE image_id IN (SELECT image_id FROM frontal) AND givcxr_region(bbox_name) IS NOT NULL
UNION ALL
SELECT f.image_id, n.region, 'nlp|yes|normal', CAST(NULL AS VARCHAR), make_array(''),
       CAST(NULL AS VARCHAR)
FROM normal_regions n
JOIN frontal f ON f.study_id = n.study_id

-- @step contexts
SELECT image_id,
       region,
       array_sort(array_distinct(array_agg(attribute) FILTER (WHERE attribute IS NOT NULL
                                                          AND split_part(attribute, '|', 1) NOT IN ('nlp', 'texture')))) AS attributes,
       array_sort(array_distinct(array_concat(
           array_remove(flatten(array_agg(texture)), ''),
           coalesce(array_agg(attribute) FILTER (WHERE split_part(attribute, '|', 1) = 'texture'),
                    make_array(''))))) AS texture,
       array_sort(array_distinct(array_agg(phrase) FILTER (WHERE phrase IS NOT NULL))) AS phrases,
       array_sort(array_distinct(array_agg(finding) FILTER (WHERE finding IS NOT NULL))) AS findings,
       coalesce(bool_or(split_part(attribute, '|', 2) = 'yes'
                        AND split_part(attribute, '|', 1) IN ('anatomicalfinding', 'disease', 'tubesandlines')
                        OR attribute = 'nlp|yes|abnormal'), false) AS abnormal
FROM facts
GROUP BY image_id, region

-- @step boxes
-- The region's box on each frontal image: its lowest-ranked source region with a box, from
-- region_boxes, or on a lake without region_boxes ($graph_boxes: imported from the release) from
-- the scene graphs' region nodes (their per-image localization, the same boxes).
SELECT image_id, region, source_region, bbox
FROM (
    SELECT image_id,
           givcxr_region(region) AS region,
           region AS source_region,
           bboxes[1] AS bbox,
           row_number() OVER (PARTITION BY image_id, givcxr_region(region)
                              ORDER BY givcxr_source_rank(region)) AS n
    FROM (
        SELECT image_id, region, bboxes FROM region_boxes
        UNION ALL
        SELECT l['image_id'] AS image_id, region, l['bboxes'] AS bboxes
        FROM (
            SELECT r['region'] AS region, unnest(r['localization']) AS l
            FROM (SELECT unnest(regions) AS r FROM scene_graphs WHERE $graph_boxes)
        )
    ) u
    WHERE givcxr_source_rank(u.region) IS NOT NULL
      AND cardinality(u.bboxes) > 0
      AND u.image_id IN (SELECT fi.image_id FROM frontal fi)
)
WHERE n = 1

-- @table givcxr_regions
SELECT c.image_id || '/' || c.region AS context_id,
       f.patient_id,
       f.study_id,
       c.image_id,
       f.split,
       c.region,
       replace(c.region, '_', ' ') AS region_name,
       b.source_region,
       b.bbox,
       f.image_width,
       f.image_height,
       array_append(array_remove(c.attributes, ''),
                    CASE WHEN c.abnormal THEN 'nlp|yes|abnormal' ELSE 'nlp|yes|normal' END) AS attributes,
       array_remove(c.texture, '') AS texture,
       c.phrases,
       c.findings,
       c.abnormal
FROM contexts c
JOIN frontal f ON f.image_id = c.image_id
JOIN boxes b ON b.image_id = c.image_id AND b.region = c.region
