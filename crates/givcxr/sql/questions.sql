-- givcxr_questions: prompt P1 of GIV-CXR (paper 002, supplement section 3.1): region-specific
-- questions about every region context, by prompts/givcxr/questions.md through the generation
-- operator (cached in llm_calls) or offline from the context's facts. Each question keeps its
-- guideline breaches as lint codes (mentions_report, temporal, subjective,
-- not_region_specific): it is answered and judged like the others, and givcxr_filter rejects it
-- with its codes.
-- Input: givcxr_regions. Output: givcxr_questions (question_id = <context_id>/q<position, two
-- digits>), and quarantine rows for contexts whose answer had no usable questions array.
-- prompt_version is the prompts' version for the LLM's rows (<version>+<hash>), the offline
-- generator's id for its rows.

-- @step generated
SELECT patient_id,
       study_id,
       context_id,
       givcxr_questions(named_struct('region', region,
                                     'region_name', region_name,
                                     'bbox', bbox,
                                     'attributes', attributes,
                                     'texture', texture,
                                     'phrases', phrases)) AS g
FROM givcxr_regions

-- @table givcxr_questions
SELECT context_id || '/q' || lpad(CAST(q['position'] AS VARCHAR), 2, '0') AS question_id,
       context_id,
       patient_id,
       study_id,
       q['position'] AS position,
       q['question'] AS question,
       q['lint'] AS lint,
       generator,
       CASE WHEN starts_with(generator, 'llm:') THEN split_part(generator, '@', 2)
            ELSE generator END AS prompt_version
FROM (
    SELECT patient_id, study_id, context_id, g['generator'] AS generator, unnest(g['records']) AS q
    FROM generated
)

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'givcxr_questions'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'givcxr_questions', g['generator'], study_id || '/' || context_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM generated
WHERE g['error'] IS NOT NULL
