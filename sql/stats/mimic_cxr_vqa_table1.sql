-- mimic_cxr_vqa_table1: paper 001 table 1 — per split, the images the QA pairs link to, the QA
-- pairs, and how many answers are open or closed (closed: at most closed_max_words words
-- starting with yes or no; templates/mimic_cxr_vqa/questions.toml), and the total.
WITH per_split AS (
    SELECT coalesce(split, 'none') AS split,
           count(*) AS qa_pairs,
           sum(CASE WHEN answer_type = 'open' THEN 1 ELSE 0 END) AS open,
           sum(CASE WHEN answer_type = 'closed' THEN 1 ELSE 0 END) AS closed
    FROM mimic_cxr_vqa_qa
    GROUP BY 1
),
images AS (
    SELECT coalesce(split, 'none') AS split, count(DISTINCT i['image_id']) AS images
    FROM (SELECT split, unnest(images) AS i FROM mimic_cxr_vqa_qa)
    GROUP BY 1
)
SELECT split, images, qa_pairs, open, closed
FROM (
    SELECT p.split, coalesce(i.images, 0) AS images, p.qa_pairs, p.open, p.closed,
           CASE p.split WHEN 'train' THEN 0 WHEN 'validate' THEN 1 WHEN 'test' THEN 2 ELSE 3 END
               AS o
    FROM per_split p
    LEFT JOIN images i ON i.split = p.split
    UNION ALL
    SELECT 'total',
           (SELECT count(DISTINCT i['image_id'])
            FROM (SELECT unnest(images) AS i FROM mimic_cxr_vqa_qa)),
           sum(qa_pairs), sum(open), sum(closed), 4
    FROM per_split
)
ORDER BY o
