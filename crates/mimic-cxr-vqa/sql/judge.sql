-- mimic_cxr_vqa_judge: the judge of the MIMIC-CXR-VQA flavour (paper 001, section 4.1,
-- table 3) on a QC sample of whole reports: $qc_reports studies (cxrlake.vqa_qc_reports; 0 means
-- all) chosen by a seeded hash of their ids (cxrlake.seed), every QA pair of each rated on four
-- rubrics — correctness, consistency with the report, completeness, clinical relevance — by the
-- LLM with prompts/mimic_cxr_vqa/judge.md (cached in llm_calls) or the offline heuristic, which
-- reads the report text (never the labels the question came from).
-- Inputs: mimic_cxr_vqa_qa, mimic_cxr_vqa_reports. Output: mimic_cxr_vqa_judgements, and
-- quarantine rows for verdicts that could not be had.

-- @step qc_sample
SELECT study_id
FROM (
    SELECT study_id,
           row_number() OVER (ORDER BY encode(sha256(CAST($seed AS VARCHAR) || '/' || study_id), 'hex'),
                                       study_id) AS n
    FROM (SELECT DISTINCT study_id FROM mimic_cxr_vqa_qa)
)
WHERE $qc_reports = 0 OR n <= $qc_reports

-- @step judged
SELECT qa.patient_id,
       qa.study_id,
       qa.split,
       qa.question_id,
       qa.category,
       qa.label_value,
       mimic_cxr_vqa_judge(named_struct('category', qa.category,
                                        'question', qa.question,
                                        'answer', qa.answer,
                                        'indication', r.indication,
                                        'findings', r.findings)) AS g
FROM mimic_cxr_vqa_qa qa
JOIN qc_sample s ON s.study_id = qa.study_id
JOIN mimic_cxr_vqa_reports r ON r.study_id = qa.study_id

-- @table mimic_cxr_vqa_judgements
SELECT patient_id, study_id, split, question_id, category, label_value, judge, unnest(v)
FROM (
    SELECT patient_id,
           study_id,
           split,
           question_id,
           category,
           label_value,
           g['generator'] AS judge,
           unnest(g['records']) AS v
    FROM judged
)

-- @table quarantine
SELECT stage, source, location, reason, raw, recorded_at
FROM quarantine
WHERE stage <> 'mimic_cxr_vqa_judge'
UNION ALL
SELECT 'mimic_cxr_vqa_judge', g['generator'], study_id || '/' || question_id, g['error'],
       CAST(g['raw'] AS BYTEA), now()
FROM judged
WHERE g['error'] IS NOT NULL
