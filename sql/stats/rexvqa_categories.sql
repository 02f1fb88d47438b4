-- rexvqa_categories: the kept ReXVQA MCQs per condition category and subcategory of paper 003
-- table A2 (names from rexvqa_taxonomy); categories the normaliser could not map are listed by
-- the generator's own text (mapped = false), so the synonyms of refdefs/rexvqa/taxonomy.toml can
-- be extended.
SELECT coalesce(c.name, q.category_raw, '(none)') AS category,
       coalesce(s.name, q.subcategory_raw, '') AS subcategory,
       q.category IS NOT NULL AS mapped,
       count(*) AS mcqs,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent
FROM rexvqa_questions q
LEFT JOIN rexvqa_taxonomy c ON c.id = q.category
LEFT JOIN rexvqa_taxonomy s ON s.id = q.subcategory
WHERE q.kept
GROUP BY 1, 2, 3
ORDER BY mcqs DESC, category, subcategory;
