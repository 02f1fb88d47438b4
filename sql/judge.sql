-- judge: the five text criteria of every QA pair (paper 000, E.3, listings 7-11: entailment,
-- relevance, completeness, question clarity, answer clarity), each distinct input judged once.
-- Inputs: qa, reports (the LLM judge reads the report), and `judged`: the content hashes already
-- rated without error (qa_judgements, plus this run's earlier chunks), which the stage registers. Output: qa_judgements, appended (it is content-addressed, never rewritten).
--
-- Each criterion is keyed by exactly what the judge reads: judge_requests() returns per QA pair
-- and criterion that input (the rendered prompt of the LLM judge, the heuristic judge's
-- canonical input) and content_hash = sha256(cache id, criterion, input), the cache id being
-- `heuristic-1` or `llm:<model>` (an edited prompt changes the inputs of its criterion only).
-- Identical inputs, in one study or across the lake, share one verdict.
--
-- Parameters: $judge, the judge id (`heuristic-1`, `llm:<model>@judge-prompts-<version>`).

-- @step requests
SELECT unnest(judge_requests(q.question_strategy, q.question, q.answers, r.text)) AS request
FROM qa q
LEFT JOIN reports r ON r.study_id = q.study_id

-- @step pending
-- One row per distinct input not judged yet.
SELECT r.criterion, r.content_hash, min(r.input) AS input, min(r.parts) AS parts
FROM (
    SELECT request['criterion'] AS criterion,
           request['content_hash'] AS content_hash,
           request['input'] AS input,
           request['parts'] AS parts
    FROM requests
) r
LEFT JOIN judged j ON j.content_hash = r.content_hash
WHERE j.content_hash IS NULL
GROUP BY r.criterion, r.content_hash

-- @table qa_judgements
-- unnest(v) flattens each verdict into levels, explanation and error.
SELECT $judge AS judge, criterion, content_hash, unnest(v)
FROM (SELECT criterion, content_hash, judge_verdict(criterion, input, parts) AS v FROM pending)
