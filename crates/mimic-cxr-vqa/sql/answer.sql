-- mimic_cxr_vqa_answer: the answers of the MIMIC-CXR-VQA flavour (paper 001, section 3.2,
-- appendices B and C): one answer per question from the study's indication and findings, by the
-- paper's prompt through the generation operator (one request per question, cached in
-- llm_calls; a study's questions are asked together, so a server with prompt caching reuses the
-- report's tokens), or composed offline from the study's scene graph in the paper's style.
-- Inputs: mimic_cxr_vqa_questions, mimic_cxr_vqa_reports, scene_graphs (the offline answerer's
-- facts). Output: mimic_cxr_vqa_qa, and quarantine rows for rejected answers.
--
-- Every answer carries the question the LLM repeated (question_echoed is false when it is not
-- the question), its type (open or closed: templates/mimic_cxr_vqa/questions.toml) and the
-- linter's hits (the 17 prohibited comparison terms, references to the report) with their
-- counts. $lint_drop (cxrlake.vqa_lint = drop) sends answers with a hit to quarantine instead.

-- @step facts
-- The study's top-level observations: finding, parents, categories, positiveness, certainty,
-- regions and severity.
SELECT study_id,
       array_agg(named_struct('finding', coalesce(o['obs_entities'][1], o['name']),
                              'parents', o['obs_entities_parents'],
                              'categories', o['obs_categories'],
                              'positiveness', o['positiveness'],
                              'certainty', o['certainty'],
                              'regions', o['regions'],
                              'severity', array_to_string(o['modifiers']['severity'], ' '))
                 ORDER BY o['obs_id']) AS facts
FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
WHERE o['child_level'] = 0
GROUP BY study_id

-- @step answered
SELECT q.patient_id,
       q.study_id,
       q.split,
       q.question_id,
       q.category,
       q.label_value,
       q.template_id,
       q.question,
       q.images,
       q.bank,
       mimic_cxr_vqa_answer(named_struct('category', q.category,
                                         'value', q.label_value,
                                         'question', q.question,
                                         'indication', r.indication,
                                         'findings', r.findings,
                                         'facts', f.facts)) AS g
FROM mimic_cxr_vqa_questions q
JOIN mimic_cxr_vqa_reports r ON r.study_id = q.study_id
LEFT JOIN facts f ON f.study_id = q.study_id

-- @step answers
SELECT patient_id,
       study_id,
       split,
       question_id,
       category,
       label_value,
       template_id,
       question,
       images,
       bank,
       g['generator'] AS generator,
       unnest(g['records']) AS a
FROM answered

-- @table mimic_cxr_vqa_qa
SELECT patient_id,
       study_id,
       split,
       question_id,
       category,
       label_value,
       template_id,
       question,
       images,
       bank,
       a['answer'] AS answer,
       a['answer_type'] AS answer_type,
       a['echoed_question'] AS echoed_question,
       a['question_echoed'] AS question_echoed,
       a['prohibited_terms'] AS prohibited_terms,
       a['report_references'] AS report_references,
       CAST(coalesce(cardinality(a['prohibited_terms']), 0) AS INT) AS prohibited_count,
       CAST(coalesce(cardinality(a['report_references']), 0) AS INT) AS report_reference_count,
       generator
FROM answers
WHERE NOT $lint_drop
   OR (coalesce(cardinality(a['prohibited_terms']), 0) = 0
       AND coalesce(cardinality(a['report_references']), 0) = 0)

-- @table quarantine
-- Rejected answers (with the answer) and failed calls, and with vqa_lint = drop the answers the
-- linter flags; earlier mimic_cxr_vqa_answer rows of the studies run are replaced, other rows
-- kept (by the run's first chunk, which overwrites the table; later chunks append).
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'mimic_cxr_vqa_answer'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'mimic_cxr_vqa_answer', g['generator'], study_id || '/' || question_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM answered
WHERE g['error'] IS NOT NULL
UNION ALL
SELECT 'mimic_cxr_vqa_answer', generator, study_id || '/' || question_id,
       'dropped by cxrlake.vqa_lint = drop: '
           || array_to_string(array_concat(coalesce(a['prohibited_terms'], make_array()),
                                           coalesce(a['report_references'], make_array())), ', '),
       CAST(a['answer'] AS BYTEA), now()
FROM answers
WHERE $lint_drop
  AND (coalesce(cardinality(a['prohibited_terms']), 0) > 0
       OR coalesce(cardinality(a['report_references']), 0) > 0)
