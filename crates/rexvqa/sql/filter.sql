-- rexvqa_filter: the filters of ReXVQA (paper 003, appendix A) over every generated MCQ:
-- V(Q) = v1 AND v2 AND v3 AND v4 AND c1 AND c2 AND c3 (an MCQ not judged is not valid); the PHI
-- check (rexvqa_phi over question, options and explanation: names, dates, identifiers, the ___
-- markers of de-identified text); near-duplicate removal (near_duplicates: embedding cosine of
-- question and options at least $duplicate_threshold, cxrlake.rexvqa_duplicate_threshold, with
-- the session's embedder) among the valid, PHI-free MCQs of the same study, keeping the first
-- by mcq_id; and the stratified QC sample: the kept MCQs in blocks of 1,000 (ordered by a
-- seeded hash of their ids, cxrlake.seed), $qc_per_1000 of each block
-- (cxrlake.rexvqa_qc_per_1000) drawn evenly over the three difficulty tiers (one tier, rotating
-- by block, takes the remainder; a tier short of MCQs in a block is not made up by the others).
-- Inputs: rexvqa_mcq, rexvqa_judgements. Output: rexvqa_questions (every MCQ with all its
-- checks, `kept` for the exported ones, `reasons` for the others) and rexvqa_taxonomy.
--
-- Near-duplicates are looked for within a study: the same question about another image is not
-- a duplicate (the image differs), so a split-wide or global scope would remove the templated
-- questions every study needs; within a study the comparison is quadratic in its handful of
-- MCQs only.

-- @step checked
SELECT q.patient_id,
       q.study_id,
       q.split,
       q.mcq_id,
       q.images,
       q.position,
       q.question,
       q.options,
       q.answer_index,
       q.generated_index,
       q.explanation,
       q.difficulty,
       q.category_raw,
       q.subcategory_raw,
       q.category,
       q.subcategory,
       q.task_type,
       q.v1_schema,
       q.v2_types,
       q.v3_format,
       q.v4_complete,
       q.structural_reasons,
       q.raw,
       q.bullets_generator,
       q.generator,
       j.c1_domain,
       j.c2_depth,
       j.c3_alignment,
       j.rationale AS content_rationale,
       j.judge,
       coalesce(q.v1_schema AND q.v2_types AND q.v3_format AND q.v4_complete
                AND j.c1_domain AND j.c2_depth AND j.c3_alignment, false) AS valid,
       coalesce(rexvqa_phi(concat_ws(' ', q.question, array_to_string(q.options, ' '),
                                     q.explanation)),
                make_array()) AS phi
FROM rexvqa_mcq q
LEFT JOIN rexvqa_judgements j ON j.mcq_id = q.mcq_id

-- @step candidates
-- Per study, the valid PHI-free MCQs in mcq_id order and the text compared.
SELECT study_id,
       array_agg(mcq_id ORDER BY mcq_id) AS ids,
       array_agg(question || ' ' || array_to_string(options, ' | ') ORDER BY mcq_id) AS texts
FROM checked
WHERE valid AND cardinality(phi) = 0
GROUP BY study_id

-- @step duplicates
SELECT mcq_id, ids[of] AS duplicate_of
FROM (
    SELECT ids, unnest(ids) AS mcq_id, unnest(near_duplicates(texts, $duplicate_threshold)) AS of
    FROM candidates
)
WHERE of IS NOT NULL

-- @step decided
SELECT c.*,
       d.duplicate_of,
       (c.valid AND cardinality(c.phi) = 0 AND d.duplicate_of IS NULL) AS kept
FROM checked c
LEFT JOIN duplicates d ON d.mcq_id = c.mcq_id

-- @step blocks
-- The kept MCQs in seeded order, cut into blocks of 1,000.
SELECT mcq_id,
       CASE difficulty WHEN 'easy' THEN 0 WHEN 'medium' THEN 1 WHEN 'hard' THEN 2 END AS tier,
       (n - 1) / 1000 AS block,
       count(*) OVER (PARTITION BY (n - 1) / 1000) AS block_size,
       row_number() OVER (PARTITION BY (n - 1) / 1000, difficulty ORDER BY n) AS tier_rank
FROM (
    SELECT mcq_id,
           difficulty,
           CAST(row_number() OVER (ORDER BY encode(sha256(CAST($seed AS VARCHAR)
                                                          || '/rexvqa-qc/' || mcq_id), 'hex'),
                                        mcq_id) AS BIGINT) AS n
    FROM decided
    WHERE kept
)

-- @step qc
-- Per block of m MCQs, k = round(m * $qc_per_1000 / 1000) drawn: k / 3 per tier, and one more
-- for the first k % 3 tiers counted from the block's rotation.
SELECT mcq_id
FROM (
    SELECT mcq_id,
           tier,
           block,
           tier_rank,
           CAST(round(block_size * $qc_per_1000 / 1000.0) AS BIGINT) AS k
    FROM blocks
    WHERE tier IS NOT NULL
)
WHERE tier_rank <= k / 3 + CASE WHEN ((tier - block) % 3 + 3) % 3 < k % 3 THEN 1 ELSE 0 END

-- @table rexvqa_questions
SELECT patient_id,
       study_id,
       split,
       mcq_id,
       images,
       position,
       question,
       options,
       answer_index,
       generated_index,
       explanation,
       difficulty,
       category_raw,
       subcategory_raw,
       category,
       subcategory,
       task_type,
       v1_schema,
       v2_types,
       v3_format,
       v4_complete,
       structural_reasons,
       raw,
       bullets_generator,
       generator,
       c1_domain,
       c2_depth,
       c3_alignment,
       content_rationale,
       judge,
       valid,
       phi,
       duplicate_of,
       kept,
       array_concat(
           coalesce(structural_reasons, make_array()),
           CASE
               WHEN judge IS NULL AND v1_schema AND v2_types AND v3_format AND v4_complete
                   THEN make_array('content: not judged')
               WHEN judge IS NOT NULL AND NOT (c1_domain AND c2_depth AND c3_alignment)
                   THEN make_array(content_rationale)
               ELSE make_array()
           END,
           phi,
           CASE WHEN duplicate_of IS NOT NULL THEN make_array('near-duplicate of ' || duplicate_of)
                ELSE make_array() END) AS reasons,
       qc_sample
FROM (SELECT d.*, q.mcq_id IS NOT NULL AS qc_sample
      FROM decided d
      LEFT JOIN qc q ON q.mcq_id = d.mcq_id)

-- @table rexvqa_taxonomy
SELECT t['level'] AS level,
       t['id'] AS id,
       t['name'] AS name,
       t['parent'] AS parent,
       t['synonyms'] AS synonyms,
       t['findings'] AS findings,
       $taxonomy AS version
FROM (SELECT unnest(rexvqa_taxonomy()) AS t)
