-- balance: how often each region and finding is mentioned positively and negatively over all
-- scene graphs, and the QA strategies' sampling probabilities (paper 000, E.2.2: "the more
-- often a region is associated with positive findings and the less often with negative
-- findings, the more often we sample it"). Input: scene_graphs. Output: qa_balance.
--
-- Parameters: $region_rate, $finding_rate, $correlated_per_finding and $normal_findings (the
-- templates' normal_findings joined by '|': a positive mention of only those counts as
-- negative) from templates/strategies.toml.
--
-- sample_probability = rate × pos_studies / (pos_studies + neg_studies + 1). A finding's
-- correlated findings are those co-mentioned positively in at least two studies, by lift
-- (both × studies / (pos_a × pos_b)), at most $correlated_per_finding.

-- @step mentions
-- One row per observation with its polarity after the normality rule.
SELECT study_id,
       o['obs_entities'] AS entities,
       o['regions'] AS regions,
       CASE WHEN o['positiveness'] = 'pos'
                 AND cardinality(o['obs_entities']) > 0
                 AND array_has_all(string_to_array($normal_findings, '|'), o['obs_entities'])
            THEN 'neg'
            ELSE o['positiveness'] END AS polarity
FROM (SELECT study_id, unnest(observations) AS o FROM scene_graphs)

-- @step finding_mentions
SELECT DISTINCT study_id, name, polarity
FROM (SELECT study_id, polarity, unnest(entities) AS name FROM mentions)
WHERE polarity IN ('pos', 'neg')

-- @step region_mentions
SELECT DISTINCT study_id, r['region'] AS name, polarity
FROM (SELECT study_id, polarity, unnest(regions) AS r FROM mentions)
WHERE polarity IN ('pos', 'neg')

-- @step item_counts
SELECT 'finding' AS kind,
       name,
       count(DISTINCT CASE WHEN polarity = 'pos' THEN study_id END) AS pos_studies,
       count(DISTINCT CASE WHEN polarity = 'neg' THEN study_id END) AS neg_studies
FROM finding_mentions
GROUP BY name
UNION ALL
SELECT 'region' AS kind,
       name,
       count(DISTINCT CASE WHEN polarity = 'pos' THEN study_id END) AS pos_studies,
       count(DISTINCT CASE WHEN polarity = 'neg' THEN study_id END) AS neg_studies
FROM region_mentions
GROUP BY name

-- @step correlated
WITH positive AS (
    SELECT study_id, name FROM finding_mentions WHERE polarity = 'pos'
),
-- The number of studies as a one-row table joined below (a scalar subquery in the window's
-- ORDER BY does not run on a Ballista cluster).
studies AS (
    SELECT count(*) AS n FROM scene_graphs
),
pairs AS (
    SELECT a.name, b.name AS other, count(*) AS both_studies
    FROM positive a
    JOIN positive b ON a.study_id = b.study_id AND a.name <> b.name
    GROUP BY a.name, b.name
),
ranked AS (
    SELECT p.name,
           p.other,
           row_number() OVER (
               PARTITION BY p.name
               ORDER BY p.both_studies * s.n * 1.0
                        / (ca.pos_studies * cb.pos_studies) DESC,
                        p.other) AS rank
    FROM pairs p
    CROSS JOIN studies s
    JOIN item_counts ca ON ca.kind = 'finding' AND ca.name = p.name
    JOIN item_counts cb ON cb.kind = 'finding' AND cb.name = p.other
    WHERE p.both_studies >= 2
)
SELECT name, array_agg(other ORDER BY rank) AS correlated
FROM ranked
WHERE rank <= $correlated_per_finding
GROUP BY name

-- @table qa_balance
SELECT c.kind,
       c.name,
       c.pos_studies,
       c.neg_studies,
       CASE c.kind WHEN 'region' THEN $region_rate ELSE $finding_rate END
           * c.pos_studies / (c.pos_studies + c.neg_studies + 1.0) AS sample_probability,
       coalesce(r.correlated, make_array()) AS correlated
FROM item_counts c
LEFT JOIN correlated r ON c.kind = 'finding' AND r.name = c.name
ORDER BY c.kind, c.name
