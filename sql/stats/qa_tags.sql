-- Finding and region tags of the answer parts (paper 000, fig. 5): per finding entity and per
-- region, how often answer parts mention it, positively and negatively, and the positive share.
WITH parts AS (
    SELECT unnest(answers) AS a FROM qa
),
tags AS (
    SELECT 'finding' AS kind, unnest(a['obs_entities']) AS tag, a['positiveness'] AS positiveness
    FROM parts
    UNION ALL
    SELECT 'region' AS kind, unnest(a['regions']) AS tag, a['positiveness'] AS positiveness
    FROM parts
)
SELECT kind,
       tag,
       count(*) AS mentions,
       count(*) FILTER (WHERE positiveness = 'pos') AS pos_mentions,
       count(*) FILTER (WHERE positiveness = 'neg') AS neg_mentions,
       round(1.0 * count(*) FILTER (WHERE positiveness = 'pos') / count(*), 3) AS pos_share
FROM tags
GROUP BY kind, tag
ORDER BY kind, mentions DESC, tag
