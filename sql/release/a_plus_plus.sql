-- A++: rating A++ only, frontal images only.
SELECT * FROM release_candidates WHERE rating >= 'A++'
