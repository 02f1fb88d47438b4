-- rexvqa_bullets: step 1 of the ReXVQA chain (paper 003, appendix A, generation layer): each
-- study's report as a structured bullet list that keeps every finding, normal and abnormal, by
-- the prompt prompts/rexvqa/bullets.md through the generation operator (cached in llm_calls), or
-- offline as the report's own FINDINGS and IMPRESSION statements.
-- Inputs: reports (the studies), sentences (sections and statements), images (split, views).
-- Output: rexvqa_bullets (one row per study with its bullets and the generator that wrote them,
-- which names the model and prompt version), and quarantine rows for reports that could not be
-- bulleted (no FINDINGS or IMPRESSION text, or no valid answer).

-- @step report_sentences
SELECT study_id,
       array_agg(named_struct('section', lower(section_type), 'text', sentence) ORDER BY sent_id)
           AS sentences
FROM sentences
WHERE section_type IN ('FINDINGS', 'IMPRESSION')
  AND sentence IS NOT NULL
GROUP BY study_id

-- @step indications
SELECT study_id, string_agg(sentence, ' ' ORDER BY sent_id) AS indication
FROM sentences
WHERE section_type = 'INDICATION'
GROUP BY study_id

-- @step study_images
-- A study's images with their view positions and its split (the official split is by patient).
SELECT study_id,
       min(split) AS split,
       array_agg(named_struct('image_id', image_id, 'view_position', view_position)
                 ORDER BY image_id) AS images
FROM images
GROUP BY study_id

-- @step bulleted
SELECT r.patient_id,
       r.study_id,
       i.split,
       i.images,
       n.indication,
       rexvqa_bullets(named_struct('indication', n.indication,
                                   'sentences', s.sentences)) AS g
FROM reports r
LEFT JOIN report_sentences s ON s.study_id = r.study_id
LEFT JOIN indications n ON n.study_id = r.study_id
LEFT JOIN study_images i ON i.study_id = r.study_id

-- @table rexvqa_bullets
SELECT patient_id, study_id, split, images, indication, g['records'] AS bullets,
       g['generator'] AS generator
FROM bulleted
WHERE g['error'] IS NULL

-- @table quarantine
-- Reports without bullets; earlier rexvqa_bullets rows of the studies run are replaced, other
-- rows kept (by the run's first chunk, which overwrites the table; later chunks append).
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'rexvqa_bullets'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'rexvqa_bullets', g['generator'], study_id, g['error'], CAST(g['raw'] AS BYTEA), now()
FROM bulleted
WHERE g['error'] IS NOT NULL
