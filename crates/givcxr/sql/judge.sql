-- givcxr_judge: prompt P3 of GIV-CXR (paper 002, supplement section 3.3): the hallucination
-- verdict {is_hallucination, explanation, score} of every QA pair, one call per region context
-- with all its pairs in position order (the context's attributes, texture cues and phrases as
-- the paper's JSON dumps), by prompts/givcxr/judge.md through the generation operator (cached
-- in llm_calls; a verdict array of another length is asked again, then rejected to quarantine:
-- verdicts are never matched to pairs by position when the counts differ) or the offline
-- heuristic. Reverse-negation questions (why a finding is absent) are always flagged; a pair
-- supported by any fact of the context is not (multiple-facts rule), unless it contradicts one.
-- Inputs: givcxr_qa, givcxr_regions. Output: givcxr_verdicts; a pair of a rejected batch has no
-- verdict (givcxr_filter rejects it as not_judged).

-- @step batches
SELECT context_id,
       array_agg(qa_id ORDER BY position) AS qa_ids,
       array_agg(named_struct('question', question, 'answer', answer) ORDER BY position) AS pairs
FROM givcxr_qa
GROUP BY context_id

-- @step judged
SELECT r.patient_id,
       r.study_id,
       r.context_id,
       b.qa_ids,
       givcxr_judge(named_struct('region', r.region,
                                 'region_name', r.region_name,
                                 'bbox', r.bbox,
                                 'attributes', r.attributes,
                                 'texture', r.texture,
                                 'phrases', r.phrases,
                                 'pairs', b.pairs)) AS g
FROM givcxr_regions r
JOIN batches b ON b.context_id = r.context_id

-- @table givcxr_verdicts
SELECT qa_ids[v['position']] AS qa_id,
       context_id,
       patient_id,
       study_id,
       v['is_hallucination'] AS is_hallucination,
       v['score'] AS score,
       v['explanation'] AS explanation,
       v['rule'] AS rule,
       judge
FROM (
    SELECT patient_id, study_id, context_id, qa_ids, g['generator'] AS judge,
           unnest(g['records']) AS v
    FROM judged
)

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE $first_chunk
  AND (stage <> 'givcxr_judge'
       OR (NOT $full AND split_part(location, '/', 1) NOT IN (SELECT study_id FROM run_scope)))
UNION ALL
SELECT 'givcxr_judge', g['generator'], study_id || '/' || context_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM judged
WHERE g['error'] IS NOT NULL
