-- judge: the five text criteria of every QA pair (paper 000, E.3, listings 7-11: entailment,
-- relevance, completeness, question clarity, answer clarity), each distinct input judged once.
-- Inputs: qa, reports (the LLM judge reads the report), and `judged`: the chunk's content hashes
-- already rated without error (in qa_judgements or by this run's earlier chunks), which the stage
-- registers after `requests` by looking them up in a set it reads once per run (a join with every
-- judged hash per chunk grew with chunks × verdicts). Output: qa_judgements, appended (it is
-- content-addressed, never rewritten).
--
-- Each criterion is keyed by exactly what the judge reads: judge_requests() returns per QA pair
-- and criterion that input (the rendered prompt of the LLM judge, the heuristic judge's
-- canonical input) and content_hash = sha256(cache id, criterion, input), the cache id being
-- `heuristic-1` or `llm:<model>` (an edited prompt changes the inputs of its criterion only).
-- Identical inputs, in one study or across the lake, share one verdict.
--
-- The pending inputs are grouped by study and criterion, ordered by content hash, in groups of at
-- most $judge_batch: the LLM judge asks one call per group (the report once, `Item 1:` … in the
-- batched prompt; a group of one is its single-item prompt), the other judges rate each input
-- on its own. Each input keeps its own row in qa_judgements.
--
-- Parameters: $judge, the judge id (`heuristic-1`, `llm:<model>@judge-prompts-<version>`, with
-- `/batch-<n>` when batched); $judge_batch, inputs per group (1 for the judges without an LLM).

-- The report is joined dictionary-encoded (here and in `groups`): the join then shares one copy
-- of each study's report among its rows, where plain strings copied it onto every QA pair and
-- group (a 4 MB report on a study of 2,000 pairs took 6 GB); the functions read it as it is.

-- @step requests
SELECT q.study_id,
       unnest(judge_requests(q.question_strategy, q.question, q.answers, r.text)) AS request
FROM qa q
LEFT JOIN (SELECT study_id, arrow_cast(arrow_cast(text, 'Utf8'), 'Dictionary(Int32, Utf8)') AS text
           FROM reports) r ON r.study_id = q.study_id

-- @step pending
-- One row per distinct input not judged yet, with the first study asking it.
SELECT r.criterion, r.content_hash, min(r.study_id) AS study_id, min(r.input) AS input,
       min(r.item) AS item, min(r.parts) AS parts
FROM (
    SELECT study_id,
           request['criterion'] AS criterion,
           request['content_hash'] AS content_hash,
           request['input'] AS input,
           request['item'] AS item,
           request['parts'] AS parts
    FROM requests
) r
LEFT JOIN judged j ON j.content_hash = r.content_hash
WHERE j.content_hash IS NULL
GROUP BY r.criterion, r.content_hash

-- @step groups
-- One row per judge call: up to $judge_batch pending inputs of one study and criterion, taken in
-- content-hash order (deterministic whatever the batch boundaries of the plan). A group's items
-- are aggregated as one list of structs without an ORDER BY (an ordered array_agg keeps a sorted
-- buffer per group: 20 times slower here); judge_verdicts reads them in content-hash order.
SELECT g.criterion, rp.text AS report, g.items
FROM (
    SELECT study_id,
           criterion,
           array_agg(named_struct('content_hash', content_hash, 'input', input, 'item', item,
                                  'parts', parts)) AS items
    FROM (
        SELECT *,
               (CAST(row_number() OVER (PARTITION BY study_id, criterion ORDER BY content_hash)
                     AS BIGINT) - 1) / CAST($judge_batch AS BIGINT) AS batch_index
        FROM pending
    )
    GROUP BY study_id, criterion, batch_index
) g
LEFT JOIN (SELECT study_id, arrow_cast(arrow_cast(text, 'Utf8'), 'Dictionary(Int32, Utf8)') AS text
           FROM reports) rp ON rp.study_id = g.study_id

-- @table qa_judgements
-- unnest(v) gives one verdict per input of the group.
SELECT $judge AS judge,
       criterion,
       v['content_hash'] AS content_hash,
       v['levels'] AS levels,
       v['explanation'] AS explanation,
       v['error'] AS error
FROM (
    SELECT criterion,
           unnest(judge_verdicts(criterion, report, items)) AS v
    FROM groups
)
