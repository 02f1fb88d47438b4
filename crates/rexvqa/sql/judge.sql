-- rexvqa_judge: the content validators of ReXVQA (paper 003, appendix A): c1 domain
-- specificity, c2 cognitive depth, c3 clinical alignment, for every MCQ that passes the four
-- structural validators, by the LLM with prompts/rexvqa/judge.md (cached in llm_calls) or the
-- offline heuristic, which reads the study's bullets.
-- Inputs: rexvqa_mcq, rexvqa_bullets. Output: rexvqa_judgements, and quarantine rows for
-- verdicts that could not be had.

-- @step judged
SELECT q.patient_id,
       q.study_id,
       q.mcq_id,
       rexvqa_judge(named_struct('question', q.question,
                                 'options', q.options,
                                 'answer_index', q.answer_index,
                                 'explanation', q.explanation,
                                 'task_type', q.task_type,
                                 'bullets', b.bullets)) AS g
FROM rexvqa_mcq q
JOIN rexvqa_bullets b ON b.study_id = q.study_id
WHERE q.v1_schema AND q.v2_types AND q.v3_format AND q.v4_complete

-- @table rexvqa_judgements
SELECT patient_id,
       study_id,
       mcq_id,
       v['c1_domain'] AS c1_domain,
       v['c2_depth'] AS c2_depth,
       v['c3_alignment'] AS c3_alignment,
       v['rationale'] AS rationale,
       judge
FROM (
    SELECT patient_id, study_id, mcq_id, g['generator'] AS judge, unnest(g['records']) AS v
    FROM judged
)

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'rexvqa_judge'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'rexvqa_judge', g['generator'], study_id || '/' || mcq_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM judged
WHERE g['error'] IS NOT NULL
