-- givcxr_terms: the most frequent words of the answers the GIV-CXR judge flagged as
-- hallucinations (paper 002: "normal, lung, left, absence, pleural"), against their frequency
-- in the answers it kept; common English words left out.
WITH words AS (
    SELECT v.is_hallucination, w AS word
    FROM (
        SELECT qa_id, unnest(string_to_array(regexp_replace(lower(answer), '[^a-z]+', ' ', 'g'), ' ')) AS w
        FROM givcxr_qa
    ) a
    JOIN givcxr_verdicts v ON v.qa_id = a.qa_id
    WHERE length(w) > 2
      AND w NOT IN ('the', 'and', 'are', 'for', 'with', 'this', 'that', 'there', 'seen', 'shows',
                    'within', 'from', 'which', 'was', 'has', 'have', 'not', 'its', 'any', 'can',
                    'may', 'also', 'into', 'than', 'area', 'image')
)
SELECT word,
       sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END) AS in_hallucinated,
       sum(CASE WHEN is_hallucination THEN 0 ELSE 1 END) AS in_kept
FROM words
GROUP BY word
HAVING sum(CASE WHEN is_hallucination THEN 1 ELSE 0 END) > 0
ORDER BY in_hallucinated DESC, word
LIMIT 20;
