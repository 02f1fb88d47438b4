-- grade: the rating of every QA pair (paper 000, D.3, tables 11 and 12): each answer part's
-- text rating (entailment, relevance by answer type, answer clarity), the question's
-- (question clarity, completeness, its parts), and the overall rating, the worst of the text
-- rating and the scene-graph aspects of the pair's observations (five extraction levels and the
-- localization of the study's frontal images; every image when it has none).
-- Inputs: qa (the version the qa stage wrote), reports, images, qa_judgements (through
-- `chunk_verdicts`, see the verdicts step).
-- Output: qa, the same rows with question_quality, answers[].answer_quality, rating,
-- rating_rank and judge filled. A pair missing a usable verdict is 'not rated'.
--
-- Joins are planned as written (the stage turns off DataFusion's statistics-driven join
-- reordering): the left input of each join is its hash table, so the wide qa rows always stream
-- through the probe side. Reordered, the last join took the chunk's qa rows as its build side
-- (a Delta scan's statistics count compressed bytes) and copied all of them into one batch.
--
-- Parameters: $judge, the judge id written to `judge`. Its requests' hashes are recomputed, so
-- they match those of the judge stage; a content hash names the judge's model, so any verdict
-- with that hash is this judge's.

-- @step requests
-- The chunk's QA pairs, each with its five criteria's content hashes (`judge_hashes`: the judge's
-- requests without the inputs, which grade does not read). The qa statement reads the pairs from
-- this step rather than scanning qa again: decoding the nested answers is most of a scan's cost.
-- The report is joined dictionary-encoded, one shared copy per study (see judge.sql).
SELECT q.*, judge_hashes(q.question_strategy, q.question, q.answers, r.text) AS hashes
FROM (SELECT study_id, arrow_cast(arrow_cast(text, 'Utf8'), 'Dictionary(Int32, Utf8)') AS text
      FROM reports) r
RIGHT JOIN qa q ON r.study_id = q.study_id

-- @step frontal
SELECT study_id, array_agg(image_id) FILTER (WHERE is_frontal) AS frontal_images
FROM images
GROUP BY study_id

-- @step verdicts
-- Everything grade_qa needs besides the qa row, one narrow row per QA pair. `chunk_verdicts` holds
-- the usable verdict (no error) of each of the chunk's request hashes that has one: the stage
-- registers it after `requests`, looked up in an index of qa_judgements read once per run (a join
-- with the whole table scanned it once per chunk, chunks × verdicts at full scale). The judge
-- never judges a hash it has a usable verdict for (two runs at once could both judge one; their
-- verdicts are equal, and the index keeps either).
SELECT g.study_id, g.question_id, g.verdicts, f.frontal_images
FROM frontal f
RIGHT JOIN (
    SELECT r.study_id,
           r.question_id,
           array_agg(named_struct('criterion', r.criterion, 'levels', j.levels)) AS verdicts
    FROM chunk_verdicts j
    RIGHT JOIN (
        SELECT study_id,
               question_id,
               h['criterion'] AS criterion,
               h['content_hash'] AS content_hash
        FROM (SELECT study_id, question_id, unnest(hashes) AS h FROM requests)
    ) r ON j.content_hash = r.content_hash
    GROUP BY r.study_id, r.question_id
) g ON f.study_id = g.study_id

-- @table qa
SELECT patient_id,
       study_id,
       question_id,
       question_type,
       question_strategy,
       variables,
       obs_ids,
       contains_report_answers,
       contains_template_answers,
       extraction_quality,
       question_img_localization_quality,
       question,
       g['answers'] AS answers,
       g['question_quality'] AS question_quality,
       g['rating'] AS rating,
       g['rating_rank'] AS rating_rank,
       extractor,
       embedder,
       $judge AS judge
FROM (
    SELECT q.*,
           grade_qa(q.answers,
                    q.extraction_quality,
                    q.question_img_localization_quality,
                    v.frontal_images,
                    v.verdicts) AS g
    FROM verdicts v
    JOIN requests q ON q.study_id = v.study_id AND q.question_id = v.question_id
)
