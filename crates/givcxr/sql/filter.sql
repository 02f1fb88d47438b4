-- givcxr_filter: what GIV-CXR exports (paper 002, supplement sections 2 and 3): every QA pair
-- with its verdict, kept when it was judged and not hallucinated, breaks no guideline of
-- prompts P1/P2 (lint), has a clinical finding and its box lies inside its image; the others go
-- to givcxr_rejects with their reasons (lint codes, hallucination, not_judged,
-- no_clinical_finding, bbox_outside_image), nothing dropped. givcxr_review is the judged pairs
-- in review order, least confident verdict first (the paper's confidence scores "essential for
-- human medical expert validation"); givcxr_region_map and givcxr_prompt_versions record the
-- vocabulary's mapping and the prompts' changelog.
-- Inputs: givcxr_qa, givcxr_verdicts. Outputs: givcxr_dataset, givcxr_rejects, givcxr_review,
-- givcxr_region_map, givcxr_prompt_versions.
--
-- image_path is the release's `image_id` of section 7.1: pXX/pXXXXXXXX/sXXXXXXXX.

-- @step judged
SELECT q.*,
       substr(q.patient_id, 1, 3) || '/' || q.patient_id || '/' || q.study_id AS image_path,
       v.is_hallucination,
       v.score,
       v.explanation,
       v.rule,
       v.judge,
       concat_ws(',',
                 nullif(array_to_string(q.lint, ','), ''),
                 CASE WHEN v.qa_id IS NULL THEN 'not_judged' END,
                 CASE WHEN v.is_hallucination THEN 'hallucination' END,
                 CASE WHEN q.clinical_finding IS NULL THEN 'no_clinical_finding' END,
                 CASE WHEN NOT (q.bbox[1] >= 0 AND q.bbox[2] >= 0 AND q.bbox[1] < q.bbox[3]
                                AND q.bbox[2] < q.bbox[4] AND q.bbox[3] <= q.image_width
                                AND q.bbox[4] <= q.image_height)
                           OR q.bbox IS NULL
                      THEN 'bbox_outside_image' END) AS reasons
FROM givcxr_qa q
LEFT JOIN givcxr_verdicts v ON v.qa_id = q.qa_id

-- @table givcxr_dataset
SELECT qa_id, context_id, patient_id, study_id, image_id, split, region, bbox, image_width,
       image_height, position, question, answer, reasoning_aspect, clinical_finding,
       bbox_size_category, question_length, answer_length, lint, generator, prompt_version,
       image_path, is_hallucination, score, explanation, rule, judge
FROM judged
WHERE reasons = ''

-- @table givcxr_rejects
SELECT qa_id, context_id, patient_id, study_id, image_id, split, region, bbox, image_width,
       image_height, position, question, answer, reasoning_aspect, clinical_finding,
       bbox_size_category, question_length, answer_length, lint, generator, prompt_version,
       image_path, is_hallucination, score, explanation, rule, judge,
       string_to_array(reasons, ',') AS reasons
FROM judged
WHERE reasons <> ''

-- @table givcxr_review
SELECT row_number() OVER (ORDER BY score, qa_id) AS priority,
       qa_id,
       split,
       region,
       question,
       answer,
       is_hallucination,
       score,
       explanation,
       rule,
       reasons = '' AS kept
FROM judged
WHERE judge IS NOT NULL

-- @table givcxr_region_map
SELECT m['name'] AS name, m['kind'] AS kind, m['region'] AS region, m['rank'] AS rank,
       $vocabulary AS version
FROM (SELECT unnest(givcxr_region_map()) AS m)

-- @table givcxr_prompt_versions
SELECT c['version'] AS version, c['date'] AS date, c['change'] AS change, $prompts AS prompts
FROM (SELECT unnest(givcxr_changelog()) AS c)
