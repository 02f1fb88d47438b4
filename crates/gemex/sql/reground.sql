-- gemex_reground: stage I of GEMeX (paper 004, section 3.1, table 9): every FINDINGS and
-- IMPRESSION sentence of a study re-grounded onto exactly one of GEMeX's 30 regions, split or
-- rewritten where it covers several, left out where it has none.
-- Inputs: sentences, imagenome_boxes (the Chest ImaGenome phrases linked to each box), images
-- (frontal only). Output: gemex_sentences, and quarantine rows for answers that were rejected.
--
-- gemex_reground() is the offline re-grounder (Chest ImaGenome's sentence-region links mapped
-- 29 → 30, merged, and the clinical rules of table 9) or, with an LLM, the prompt of table 9
-- through the generation operator (one request per distinct sentence, cached in llm_calls).

-- @step links
-- Each sentence with the Chest ImaGenome regions whose phrases are that sentence (compared
-- without case, spacing and final punctuation), over the study's frontal images.
WITH phrases AS (
    SELECT b.study_id,
           b.bbox_name,
           lower(regexp_replace(trim(trailing '.' FROM trim(p)), '\s+', ' ', 'g')) AS phrase
    FROM (SELECT study_id, image_id, bbox_name, unnest(phrases) AS p FROM imagenome_boxes) b
    JOIN images i ON i.image_id = b.image_id AND i.is_frontal
),
report AS (
    SELECT patient_id,
           study_id,
           sent_id,
           sentence,
           lower(regexp_replace(trim(trailing '.' FROM trim(sentence)), '\s+', ' ', 'g')) AS phrase
    FROM sentences
    WHERE section_type IN ('FINDINGS', 'IMPRESSION')
)
SELECT r.patient_id,
       r.study_id,
       r.sent_id,
       r.sentence,
       array_sort(array_agg(DISTINCT p.bbox_name) FILTER (WHERE p.bbox_name IS NOT NULL))
           AS imagenome_regions
FROM report r
LEFT JOIN phrases p ON p.study_id = r.study_id AND p.phrase = r.phrase
GROUP BY r.patient_id, r.study_id, r.sent_id, r.sentence

-- @step grounded
SELECT patient_id,
       study_id,
       sent_id,
       sentence,
       gemex_reground(named_struct('study_id', study_id,
                                   'sentence', sentence,
                                   'imagenome_regions', imagenome_regions)) AS g
FROM links

-- @table gemex_sentences
-- One row per re-grounded sentence; sent_index numbers them in report order.
SELECT patient_id,
       study_id,
       CAST(n - 1 AS INT) AS sent_index,
       source_sentence,
       grounder,
       unnest(r)
FROM (
    SELECT *,
           row_number() OVER (PARTITION BY study_id ORDER BY sent_id, r['sentence']) AS n
    FROM (
        SELECT patient_id,
               study_id,
               sent_id,
               sentence AS source_sentence,
               g['generator'] AS grounder,
               unnest(g['records']) AS r
        FROM grounded
    )
)

-- @table quarantine
-- Rejected answers (with the answer) and failed calls; earlier gemex_reground rows of the
-- studies run are replaced, other rows kept (by the run's first chunk, which overwrites the
-- table; later chunks append their rejects).
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'gemex_reground'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'gemex_reground', g['generator'], study_id || '/' || sent_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM grounded
WHERE g['error'] IS NOT NULL
