-- gemex_generate: stage II of GEMeX (paper 004, section 3.2, table 10): for every frontal image
-- whose study has at least three re-grounded sentences, 11 grounded and explainable questions
-- (3 open-ended, 2 closed-ended, 3 single-choice, 3 multi-choice), each with its content type,
-- answer, reason, visual regions and their boxes on the image (original pixels and Chest
-- ImaGenome's 224 × 224 frame).
-- Inputs: gemex_sentences, images, imagenome_boxes, scene_graphs (the study's observations, the
-- offline generator's facts). Output: gemex_qa, and quarantine rows for rejected answers.
--
-- gemex_generate() is the offline generator or, with an LLM, the prompt of table 10 through the
-- generation operator (one request per image, cached in llm_calls); answers that miss the
-- 3/2/3/3 quota, break a choice invariant or use a banned term are asked again, then rejected.

-- @step study_sentences
SELECT study_id,
       array_agg(named_struct('sentence', sentence, 'region', region) ORDER BY sent_index)
           AS sentences
FROM gemex_sentences
GROUP BY study_id
HAVING count(*) >= 3

-- @step image_boxes
-- The 30 regions' boxes on each frontal image: unions of its Chest ImaGenome boxes.
SELECT b.image_id,
       gemex_region_boxes(array_agg(named_struct('bbox_name', b.bbox_name, 'bbox', b.bbox)))
           AS boxes
FROM imagenome_boxes b
JOIN images i ON i.image_id = b.image_id AND i.is_frontal
GROUP BY b.image_id

-- @step observation_regions
-- The regions of each top-level observation, by name.
SELECT study_id, obs_id, array_agg(region) AS regions
FROM (
    SELECT study_id, o['obs_id'] AS obs_id, unnest(o['regions'])['region'] AS region
    FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
    WHERE o['child_level'] = 0
)
GROUP BY study_id, obs_id

-- @step facts
-- The study's top-level observations: finding, positiveness, severity, regions, sentence.
SELECT f.study_id,
       array_agg(named_struct('finding', f.finding,
                              'positiveness', f.positiveness,
                              'severity', f.severity,
                              'regions', r.regions,
                              'sentence', f.sentence) ORDER BY f.obs_id) AS facts
FROM (
    SELECT study_id,
           o['obs_id'] AS obs_id,
           coalesce(o['obs_entities'][1], o['name']) AS finding,
           o['positiveness'] AS positiveness,
           array_to_string(o['modifiers']['severity'], ' ') AS severity,
           o['summary_sentence'] AS sentence
    FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
    WHERE o['child_level'] = 0
) f
LEFT JOIN observation_regions r ON r.study_id = f.study_id AND r.obs_id = f.obs_id
GROUP BY f.study_id

-- @step generated
SELECT i.patient_id,
       i.study_id,
       i.image_id,
       i.split,
       i.columns AS width,
       i.rows AS height,
       gemex_generate(named_struct('image_id', i.image_id,
                                   'study_id', i.study_id,
                                   'width', i.columns,
                                   'height', i.rows,
                                   'sentences', s.sentences,
                                   'boxes', b.boxes,
                                   'facts', f.facts)) AS g
FROM images i
JOIN study_sentences s ON s.study_id = i.study_id
LEFT JOIN image_boxes b ON b.image_id = i.image_id
LEFT JOIN facts f ON f.study_id = i.study_id
WHERE i.is_frontal

-- @table gemex_qa
-- One row per question; question_id numbers an image's questions by type, then text.
SELECT patient_id,
       study_id,
       image_id,
       split,
       width,
       height,
       generator,
       image_id || '_q' || lpad(CAST(n AS VARCHAR), 2, '0') AS question_id,
       unnest(r)
FROM (
    SELECT *,
           row_number() OVER (
               PARTITION BY image_id
               ORDER BY CASE r['question_type'] WHEN 'open-ended' THEN 0
                                                WHEN 'closed-ended' THEN 1
                                                WHEN 'single-choice' THEN 2
                                                ELSE 3 END,
                        r['question']) AS n
    FROM (
        SELECT patient_id,
               study_id,
               image_id,
               split,
               width,
               height,
               g['generator'] AS generator,
               unnest(g['records']) AS r
        FROM generated
    )
)

-- @table quarantine
-- Rejected answers (with the answer) and failed calls; earlier gemex_generate rows of the
-- studies run are replaced, other rows kept (by the run's first chunk, which overwrites the
-- table; later chunks append their rejects).
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'gemex_generate'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'gemex_generate', g['generator'], study_id || '/' || image_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM generated
WHERE g['error'] IS NOT NULL
