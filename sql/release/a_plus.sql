-- A+: rating A+ or better, frontal images only.
SELECT * FROM release_candidates WHERE rating >= 'A+'
