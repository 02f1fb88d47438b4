-- givcxr_answers: prompt P2 of GIV-CXR (paper 002, supplement section 3.2): one answer per
-- question of every region context, in the questions' order, by prompts/givcxr/answers.md
-- through the generation operator (cached in llm_calls; an answer list of another length is
-- asked again, then rejected to quarantine: answers are never matched to questions by position
-- when the counts differ) or offline from the context's facts; then the derived fields of
-- section 7.1: reasoning_aspect (the question's focus among the six of prompt P1),
-- clinical_finding (one of the vocabulary's 28 or `normal`; NULL for a pair about findings
-- outside it), bbox_size_category (the box's share of the image against
-- cxrlake.givcxr_bbox_small / givcxr_bbox_large), question_length and answer_length (words).
-- Inputs: givcxr_questions, givcxr_regions. Output: givcxr_qa (qa_id = question_id).

-- @step asked
SELECT context_id,
       array_agg(question ORDER BY position) AS questions,
       array_agg(question_id ORDER BY position) AS question_ids,
       array_agg(lint ORDER BY position) AS lints,
       first_value(generator) AS question_generator,
       first_value(prompt_version) AS question_prompt_version
FROM givcxr_questions
GROUP BY context_id

-- @step generated
SELECT r.patient_id,
       r.study_id,
       r.context_id,
       a.question_ids,
       a.questions,
       a.lints,
       givcxr_answers(named_struct('region', r.region,
                                   'region_name', r.region_name,
                                   'bbox', r.bbox,
                                   'attributes', r.attributes,
                                   'texture', r.texture,
                                   'phrases', r.phrases,
                                   'questions', a.questions)) AS g
FROM givcxr_regions r
JOIN asked a ON a.context_id = r.context_id

-- @step answers
SELECT context_id,
       question_ids[a['position']] AS qa_id,
       questions[a['position']] AS question,
       array_concat(lints[a['position']], a['lint']) AS lint,
       a['position'] AS position,
       a['answer'] AS answer,
       generator
FROM (
    SELECT context_id, question_ids, questions, lints, g['generator'] AS generator,
           unnest(g['records']) AS a
    FROM generated
)

-- @step derived
SELECT a.qa_id,
       r.context_id,
       r.patient_id,
       r.study_id,
       r.image_id,
       r.split,
       r.region,
       r.bbox,
       r.image_width,
       r.image_height,
       a.position,
       a.question,
       a.answer,
       a.lint,
       a.generator,
       givcxr_derive(a.question, a.answer, r.findings, r.abnormal) AS d,
       (r.bbox[3] - r.bbox[1]) * (r.bbox[4] - r.bbox[2])
           / greatest(CAST(r.image_width AS DOUBLE) * r.image_height, 1.0) AS area
FROM answers a
JOIN givcxr_regions r ON r.context_id = a.context_id

-- @table givcxr_qa
SELECT qa_id,
       context_id,
       patient_id,
       study_id,
       image_id,
       split,
       region,
       bbox,
       image_width,
       image_height,
       position,
       question,
       answer,
       d['reasoning_aspect'] AS reasoning_aspect,
       d['clinical_finding'] AS clinical_finding,
       CASE WHEN area < $bbox_small THEN 'small'
            WHEN area < $bbox_large THEN 'medium'
            ELSE 'large' END AS bbox_size_category,
       d['question_length'] AS question_length,
       d['answer_length'] AS answer_length,
       lint,
       generator,
       CASE WHEN starts_with(generator, 'llm:') THEN split_part(generator, '@', 2)
            ELSE generator END AS prompt_version
FROM derived

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'givcxr_answers'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'givcxr_answers', g['generator'], study_id || '/' || context_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM generated
WHERE g['error'] IS NOT NULL
