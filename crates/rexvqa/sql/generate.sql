-- rexvqa_generate: step 2 of the ReXVQA chain (paper 003, appendix A): four-option MCQs with an
-- explanation, difficulty, category and task type from each study's bullet list, by the prompt
-- prompts/rexvqa/generate.md through the generation operator (cached in llm_calls), or offline
-- from the study's scene graph and the reference definitions (presence, location, negation,
-- differential-diagnosis and geometric questions; distractors from refdefs siblings;
-- explanations from the report's statements).
-- Inputs: rexvqa_bullets, scene_graphs (the offline generator's facts). Output: rexvqa_mcq (every
-- MCQ, valid or not, with the structural validators v1-v4 and their reasons; the correct option
-- moved to a seeded position; category and subcategory normalised onto table A2), and
-- quarantine rows for studies whose answer had no questions array.
--
-- mcq_id is <study_id>_q<position, two digits>; bullets_generator names the bullet list the MCQs
-- were written from (model and prompt version).

-- @step facts
-- The study's top-level observations: finding, subcategories, positiveness, certainty, regions,
-- laterality and the scene graph's summary sentence.
SELECT study_id,
       array_agg(named_struct('finding', coalesce(o['obs_entities'][1], o['name']),
                              'subcategories', o['obs_subcategories'],
                              'positiveness', o['positiveness'],
                              'certainty', o['certainty'],
                              'regions', o['regions'],
                              'laterality', o['laterality'],
                              'statement', o['summary_sentence'])
                 ORDER BY o['obs_id']) AS facts
FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)
WHERE o['child_level'] = 0
GROUP BY study_id

-- @step generated
SELECT b.patient_id,
       b.study_id,
       b.split,
       b.images,
       b.generator AS bullets_generator,
       rexvqa_generate(named_struct('study_id', b.study_id,
                                    'bullets', b.bullets,
                                    'facts', f.facts)) AS g
FROM rexvqa_bullets b
LEFT JOIN facts f ON f.study_id = b.study_id

-- @step mcqs
SELECT patient_id, study_id, split, images, bullets_generator, g['generator'] AS generator,
       unnest(g['records']) AS m
FROM generated

-- @table rexvqa_mcq
SELECT patient_id,
       study_id,
       split,
       study_id || '_q' || lpad(CAST(m['position'] AS VARCHAR), 2, '0') AS mcq_id,
       images,
       m['position'] AS position,
       m['question'] AS question,
       m['options'] AS options,
       m['answer_index'] AS answer_index,
       m['generated_index'] AS generated_index,
       m['explanation'] AS explanation,
       m['difficulty'] AS difficulty,
       m['category_raw'] AS category_raw,
       m['subcategory_raw'] AS subcategory_raw,
       m['category'] AS category,
       m['subcategory'] AS subcategory,
       m['task_type'] AS task_type,
       m['v1_schema'] AS v1_schema,
       m['v2_types'] AS v2_types,
       m['v3_format'] AS v3_format,
       m['v4_complete'] AS v4_complete,
       m['structural_reasons'] AS structural_reasons,
       m['raw'] AS raw,
       bullets_generator,
       generator
FROM mcqs

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'rexvqa_generate'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'rexvqa_generate', g['generator'], study_id, g['error'], CAST(g['raw'] AS BYTEA), now()
FROM generated
WHERE g['error'] IS NOT NULL
